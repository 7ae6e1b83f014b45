// SessionSet (net/worker_core.h): ids, counts per protocol, deferred destruction.
#include <gtest/gtest.h>

#include <event2/event.h>
#include <unistd.h>

#include <memory>
#include <set>

#include "rill/core/event_timer_queue.h"
#include "rill/net/worker_core.h"

namespace rill::net {
namespace {

class CountedSession final : public Session {
 public:
  CountedSession(SessionProtocol p, int* destroyed) : Session(p), destroyed_(destroyed) {}
  ~CountedSession() override { ++*destroyed_; }
  void close(const char*) override {}

 private:
  int* destroyed_;
};

TEST(SessionSet, IdsAreUniqueAndNameTheProcess) {
  event_base* base = event_base_new();
  {
    int destroyed = 0;  // before the set: its destructor destroys the sessions that count here
    EventTimerQueue timers(base);
    SessionSet set(timers);
    std::set<uint64_t> ids;
    for (int i = 0; i < 100; ++i) {
      Session* s = set.add(std::make_unique<CountedSession>(SessionProtocol::Rtmp, &destroyed));
      EXPECT_TRUE(ids.insert(s->id()).second);
      EXPECT_EQ(s->id() >> 32, static_cast<uint64_t>(::getpid()));  // unique across workers
      EXPECT_EQ(s->describe().id, s->id());
    }
    // An id given before add() is kept (an HTTP-FLV session keeps its request's id).
    const uint64_t mine = set.next_id();
    auto pre = std::make_unique<CountedSession>(SessionProtocol::HttpFlv, &destroyed);
    pre->set_id(mine);
    Session* s = set.add(std::move(pre));
    EXPECT_EQ(s->id(), mine);
    EXPECT_EQ(set.count(SessionProtocol::Rtmp), 100u);
    EXPECT_EQ(set.count(SessionProtocol::HttpFlv), 1u);
    set.retire(s);
    EXPECT_EQ(set.count(SessionProtocol::HttpFlv), 0u);
    EXPECT_EQ(destroyed, 0);  // destroyed from the loop, after the current callback
    event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    EXPECT_EQ(destroyed, 1);
  }
  event_base_free(base);
}

}  // namespace
}  // namespace rill::net
