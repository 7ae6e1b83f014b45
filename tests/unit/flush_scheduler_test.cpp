// net::FlushScheduler's hold modes on a real event loop: what is flushed in this iteration, what
// waits, and for how long (held requests have deadlines of their own).
#include "rill/net/flush_scheduler.h"

#include <event2/event.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

namespace rill::net {
namespace {

constexpr int64_t kWindow = 250'000;  // µs, one load sample
constexpr int64_t kMax = 80'000;

// Feeds n windows at utilization u (0..1).
void feed(MergePolicy& p, double u, int n = 1) {
  for (int i = 0; i < n; ++i) p.sample(static_cast<int64_t>(u * kWindow), kWindow);
}

struct Counter final : Flushable {
  int flushes = 0;
  void flush() override { ++flushes; }
};

struct SchedulerTest : ::testing::Test {
  std::unique_ptr<event_base, decltype(&event_base_free)> base{event_base_new(), &event_base_free};
  void run_ready() { event_base_loop(base.get(), EVLOOP_NONBLOCK); }
};

TEST_F(SchedulerTest, ZeroHoldFlushesOnceInThisIteration) {
  FlushScheduler s(base.get(), 0);
  Counter c;
  s.request(&c);
  s.request(&c);  // merged with the first
  run_ready();
  EXPECT_EQ(c.flushes, 1);
}

TEST_F(SchedulerTest, RequestNowIsNotHeldByAFixedMerge) {
  FlushScheduler s(base.get(), 1000);  // 1 s: never reached by a loop run that does not wait
  Counter held, burst;
  s.request(&held);
  s.request(&burst);
  s.request_now(&burst);
  run_ready();
  EXPECT_EQ(held.flushes, 0);
  EXPECT_EQ(burst.flushes, 1);
  EXPECT_EQ(s.current_hold_us(), 1'000'000);
  s.forget(&held);
  s.forget(&burst);
}

TEST_F(SchedulerTest, ForgottenFlushablesAreNotCalled) {
  FlushScheduler s(base.get(), 0);
  Counter a, b;
  s.request(&a);
  s.request_now(&b);
  s.forget(&a);
  s.forget(&b);
  run_ready();
  EXPECT_EQ(a.flushes + b.flushes, 0);
}

TEST_F(SchedulerTest, AutoModeStartsWithoutHolding) {
  FlushScheduler s(base.get(), MergeWrites{true, 0, kMax});
  ASSERT_NE(s.policy(), nullptr);
  EXPECT_EQ(s.policy()->max_hold_us(), kMax);
  Counter c;
  s.request(&c);
  run_ready();
  EXPECT_EQ(c.flushes, 1);  // a fresh worker is not busy: no hold
}

TEST_F(SchedulerTest, VideoLeavesAtOnceWithTheAudioHeldBeforeItWhileTheHoldIsShort) {
  FlushScheduler s(base.get(), MergeWrites{true, 0, kMax});
  feed(*s.policy(), 0.40);  // busy: a hold shorter than one video interval
  ASSERT_GT(s.current_hold_us(), 0);
  ASSERT_LT(s.current_hold_us(), FlushScheduler::kVideoPaceUs);
  ASSERT_EQ(s.video_frames_per_write(), 1u);
  Counter audio_only, with_video;
  s.request_frame(&audio_only, false);
  s.request_frame(&with_video, false);
  s.request_frame(&with_video, true);
  run_ready();
  EXPECT_EQ(audio_only.flushes, 0);  // held
  EXPECT_EQ(with_video.flushes, 1);  // the video frame took the audio before it along
  s.forget(&audio_only);
  s.forget(&with_video);
}

TEST_F(SchedulerTest, LongerHoldsPutSeveralVideoFramesInOneWrite) {
  FlushScheduler s(base.get(), MergeWrites{true, 0, kMax});
  feed(*s.policy(), 1.0, 50);  // saturated: the hold is at the cap
  ASSERT_EQ(s.current_hold_us(), kMax);
  ASSERT_EQ(s.video_frames_per_write(), 3u);
  Counter c;
  s.request_frame(&c, true);
  s.request_frame(&c, true);
  run_ready();
  EXPECT_EQ(c.flushes, 0);  // two of three
  s.request_frame(&c, true);
  run_ready();
  EXPECT_EQ(c.flushes, 1);    // the third one flushes, in this iteration
  s.request_frame(&c, true);  // the count restarted with that flush
  run_ready();
  EXPECT_EQ(c.flushes, 1);
  event_base_loop(base.get(), EVLOOP_ONCE);  // the hold timer bounds it: kMax
  EXPECT_GE(c.flushes, 2);
  s.forget(&c);
}

TEST_F(SchedulerTest, FixedHoldsTreatVideoLikeEverythingElse) {
  FlushScheduler s(base.get(), 1000);
  Counter c;
  for (int i = 0; i < 5; ++i) s.request_frame(&c, true);
  run_ready();
  EXPECT_EQ(c.flushes, 0);
  s.forget(&c);
}

TEST_F(SchedulerTest, AnIdleAutoWorkerFlushesEveryFrameAtOnce) {
  FlushScheduler s(base.get(), MergeWrites{true, 0, kMax});
  Counter a, v;
  s.request_frame(&a, false);
  s.request_frame(&v, true);
  run_ready();
  EXPECT_EQ(a.flushes, 1);
  EXPECT_EQ(v.flushes, 1);
}

TEST_F(SchedulerTest, APlayerThatFellBehindCatchesUpWithoutWaitingForTheHold) {
  for (const MergeWrites mode : {MergeWrites{false, 1'000'000, 0}, MergeWrites{true, 0, kMax}}) {
    FlushScheduler s(base.get(), mode);
    if (s.policy()) feed(*s.policy(), 1.0, 50);  // auto and saturated: held up to the cap
    Counter c;
    s.request_frame(&c, false, FlushScheduler::kCatchUpMs);  // at the bound: held
    run_ready();
    EXPECT_EQ(c.flushes, 0);
    s.request_frame(&c, false, FlushScheduler::kCatchUpMs + 1);
    run_ready();
    EXPECT_EQ(c.flushes, 1);
    s.forget(&c);
  }
}

TEST_F(SchedulerTest, AHeldRequestWaitsForItsOwnDeadlineNotForAnEarlierOnes) {
  // Fixed 400 ms. a flushes at once meanwhile; its next request, 200 ms later, is due 200 ms after
  // b's. One timer for the whole batch would flush it with b, 200 ms early: with video pacing,
  // that sent audio alone just before the video frame it was waiting for.
  using namespace std::chrono_literals;
  FlushScheduler s(base.get(), 400);
  Counter a, b;
  s.request(&a);
  s.request(&b);
  s.request_now(&a);
  run_ready();
  ASSERT_EQ(a.flushes, 1);
  std::this_thread::sleep_for(200ms);
  s.request(&a);
  event_base_loop(base.get(), EVLOOP_ONCE);  // b's deadline; a's first request went stale
  EXPECT_EQ(b.flushes, 1);
  EXPECT_EQ(a.flushes, 1);
  event_base_loop(base.get(), EVLOOP_ONCE);  // a's own deadline
  EXPECT_EQ(a.flushes, 2);
  EXPECT_EQ(b.flushes, 1);
}

TEST_F(SchedulerTest, AStaleHeldRequestOfAForgottenFlushableIsNeverTouched) {
  FlushScheduler s(base.get(), 50);
  auto gone = std::make_unique<Counter>();
  Counter other;
  s.request(gone.get());
  s.request(&other);
  s.request_now(gone.get());
  run_ready();  // gone flushed: its held request is satisfied, its entry stale
  s.forget(gone.get());
  gone.reset();
  event_base_loop(base.get(), EVLOOP_ONCE);  // the timer walks past the entry (ASan: no use)
  EXPECT_EQ(other.flushes, 1);
}

TEST_F(SchedulerTest, HeldFramesWaitForTheVideoFrameThatPacesTheWrite) {
  FlushScheduler s(base.get(), MergeWrites{true, 0, kMax});
  EXPECT_EQ(s.bound_us(), 0);  // not busy: nothing waits
  EXPECT_EQ(s.reported_video_frames(), 0u);
  feed(*s.policy(), 0.30);  // level 1: audio waits for the next video frame...
  ASSERT_EQ(s.video_frames_per_write(), 1u);
  // ...a little longer than a frame interval, so that it does not leave alone just before it.
  EXPECT_EQ(s.bound_us(), FlushScheduler::kVideoPaceUs + FlushScheduler::kPaceSlackUs);
  EXPECT_EQ(s.reported_hold_us(), s.bound_us());
  EXPECT_EQ(s.reported_video_frames(), 1u);
  feed(*s.policy(), 1.0, 50);  // saturated: three frames a write, the cap bounds the wait
  EXPECT_EQ(s.video_frames_per_write(), 3u);
  EXPECT_EQ(s.bound_us(), kMax);
  FlushScheduler tight(base.get(), MergeWrites{true, 0, 20'000});  // merge_writes_max: 20ms
  feed(*tight.policy(), 1.0, 50);
  EXPECT_EQ(tight.bound_us(), 20'000);  // the operator's cap wins over pacing
  FlushScheduler fixed(base.get(), 100);
  EXPECT_EQ(fixed.bound_us(), 100'000);
  EXPECT_EQ(fixed.reported_video_frames(), 0u);
}

}  // namespace
}  // namespace rill::net
