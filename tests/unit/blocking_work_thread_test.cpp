// net::BlockingWorkThread: jobs run off the loop, in order, their continuations on the loop; the
// queue is bounded; nothing runs after it is destroyed.
#include "rill/net/blocking_work_thread.h"

#include <event2/event.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace rill::net {
namespace {

struct Loop {
  std::unique_ptr<event_base, decltype(&event_base_free)> base{event_base_new(), &event_base_free};
  // Runs the loop until `done` or about 5 s.
  template <class Pred>
  bool run_until(Pred done) {
    for (int i = 0; i < 500 && !done(); ++i) {
      const timeval tick{0, 10000};
      event_base_loopexit(base.get(), &tick);
      event_base_loop(base.get(), 0);
    }
    return done();
  }
};

TEST(BlockingWorkThread, JobsOffTheLoopContinuationsOnIt) {
  Loop loop;
  BlockingWorkThread work(loop.base.get());
  const auto loop_thread = std::this_thread::get_id();
  std::vector<int> order;
  std::atomic<bool> off_loop{true};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(work.submit([&, i]() -> BlockingWorkThread::Continuation {
      if (std::this_thread::get_id() == loop_thread) off_loop = false;
      return [&, i] {
        EXPECT_EQ(std::this_thread::get_id(), loop_thread);
        order.push_back(i);
      };
    }));
  }
  EXPECT_TRUE(loop.run_until([&] { return order.size() == 3; }));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(off_loop);
}

TEST(BlockingWorkThread, BoundedAndQuietAfterDestruction) {
  Loop loop;
  std::atomic<bool> started{false}, release{false};
  bool continued = false;
  {
    BlockingWorkThread work(loop.base.get(), 2);
    // The first job holds the thread; two more wait; a fourth is refused.
    ASSERT_TRUE(work.submit([&]() -> BlockingWorkThread::Continuation {
      started = true;
      while (!release) std::this_thread::yield();
      return [&] { continued = true; };
    }));
    while (!started) std::this_thread::yield();
    EXPECT_TRUE(work.submit([] { return BlockingWorkThread::Continuation{}; }));
    EXPECT_TRUE(work.submit([] { return BlockingWorkThread::Continuation{}; }));
    EXPECT_FALSE(work.submit([] { return BlockingWorkThread::Continuation{}; }));
    release = true;
  }
  event_base_loop(loop.base.get(), EVLOOP_NONBLOCK);  // its event went with it: nothing runs
  EXPECT_FALSE(continued);
}

}  // namespace
}  // namespace rill::net
