// net::MergePolicy (fed synthetic load samples, no clock) and FlushScheduler's hold modes (a real
// event loop run without waiting: what is flushed in this iteration, and what is not).
#include "rill/net/merge_policy.h"

#include <event2/event.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "rill/net/flush_scheduler.h"

namespace rill::net {
namespace {

constexpr int64_t kWindow = 250'000;  // µs, one sample
constexpr int64_t kMax = 80'000;

// Feeds n windows at utilization u (0..1).
void feed(MergePolicy& p, double u, int n = 1) {
  for (int i = 0; i < n; ++i) p.sample(static_cast<int64_t>(u * kWindow), kWindow);
}

TEST(MergePolicy, IdleAndLightLoadNeverHold) {
  MergePolicy p(kMax);
  EXPECT_EQ(p.hold_us(), 0);
  feed(p, 0.0, 20);
  EXPECT_EQ(p.hold_us(), 0);
  feed(p, 0.10, 40);  // 200 players at 4 Mbps: ~10 % of a core
  EXPECT_EQ(p.hold_us(), 0);
  feed(p, 0.18, 40);  // inside the band: nothing to gain, nothing changes
  EXPECT_EQ(p.hold_us(), 0);
}

TEST(MergePolicy, BusyWorkerHoldsLongerUpToTheCap) {
  MergePolicy p(kMax);
  feed(p, 0.40);
  const int64_t first = p.hold_us();
  EXPECT_GT(first, 0);
  feed(p, 0.40);
  EXPECT_GT(p.hold_us(), first);
  feed(p, 1.0, 50);  // saturated
  EXPECT_EQ(p.hold_us(), kMax);
  EXPECT_GT(p.load(), 0.9);
}

TEST(MergePolicy, InsideTheBandTheHoldOnlyDriftsDown) {
  MergePolicy p(kMax);
  feed(p, 0.40, 3);
  feed(p, 0.16, 3);  // the smoothed load settles into the band
  int64_t held = p.hold_us();
  ASSERT_GT(held, 0);
  // The load is in the band, whatever the noise inside it: never longer, only slowly shorter.
  for (int i = 0; i < 40; ++i) {
    feed(p, i % 2 ? 0.13 : 0.19);
    EXPECT_LE(p.hold_us(), held) << "sample " << i;
    EXPECT_GE(p.hold_us(), held - held / 8) << "sample " << i;
    held = p.hold_us();
  }
}

TEST(MergePolicy, SettlesOnABusyWorkerWithoutOscillating) {
  // A synthetic worker: 40 % of a core unmerged, the cost per byte falling as holds grow
  // (1000 players at 750 kbps: 0 ms -> ~40 %, 20 ms -> ~20 %, 100 ms -> ~7 %).
  auto plant = [](int64_t hold_us) { return 0.40 / (1.0 + static_cast<double>(hold_us) / 20'000.0); };
  MergePolicy p(kMax);
  for (int i = 0; i < 200; ++i) feed(p, plant(p.hold_us()));
  int64_t lo = kMax, hi = 0;
  for (int i = 0; i < 80; ++i) {
    feed(p, plant(p.hold_us()));
    lo = std::min(lo, p.hold_us());
    hi = std::max(hi, p.hold_us());
  }
  EXPECT_GE(lo, 10'000);              // it does merge
  EXPECT_LE(hi, 40'000);              // far from the cap: only what the load needs
  EXPECT_LE(hi - lo, (lo + hi) / 4);  // settled: no swing between short and long holds
  EXPECT_LE(plant(lo), 0.22);         // and the load is held near the band's top
}

TEST(MergePolicy, AHoldLeftByABurstFades) {
  MergePolicy p(kMax);
  feed(p, 0.9, 2);  // a ramp of handshakes
  ASSERT_GT(p.hold_us(), 0);
  feed(p, 0.15, 80);  // then a light steady load inside the band
  EXPECT_EQ(p.hold_us(), 0);
}

TEST(MergePolicy, ShrinksQuicklyWhenTheLoadGoes) {
  MergePolicy p(kMax);
  feed(p, 1.0, 50);
  ASSERT_EQ(p.hold_us(), kMax);
  feed(p, 0.0, 5);  // within ~1 s the EWMA falls under busy_low, then each window halves the hold
  EXPECT_LT(p.hold_us(), kMax / 2);
  feed(p, 0.0, 10);
  EXPECT_EQ(p.hold_us(), 0);
}

TEST(MergePolicy, ALongWindowWithoutFlushesMeansIdle) {
  MergePolicy p(kMax);
  feed(p, 1.0, 50);
  ASSERT_EQ(p.hold_us(), kMax);
  p.sample(50'000, 5'000'000);  // 5 s since the last held batch
  EXPECT_EQ(p.hold_us(), 0);
}

TEST(MergePolicy, ZeroCapNeverHoldsAndBadSamplesAreIgnored) {
  MergePolicy zero(0);
  feed(zero, 1.0, 20);
  EXPECT_EQ(zero.hold_us(), 0);
  MergePolicy p(kMax);
  p.sample(100, 0);
  p.sample(100, -5);
  EXPECT_EQ(p.load(), 0.0);
  p.sample(10 * kWindow, kWindow);  // more CPU than wall time (clock granularity): clamped
  EXPECT_LE(p.load(), 1.0);
}

TEST(MergePolicy, EachVideoStepTakenNeedsMoreLoadToGrowFurther) {
  MergePolicyParams stepped;
  stepped.step_us = 40'000;  // FlushScheduler::kVideoPaceUs
  MergePolicy p(kMax, stepped);
  EXPECT_DOUBLE_EQ(p.grow_above(), 0.20);
  // Just above busy_high (HTTP-FLV's 1000 players with two video frames per write): the hold
  // grows into the second step and stays there, never reaching the third (the cap).
  feed(p, 0.30, 10);
  ASSERT_GE(p.hold_us(), 40'000);
  EXPECT_DOUBLE_EQ(p.grow_above(), 0.25);
  for (int i = 0; i < 200; ++i) {
    feed(p, 0.22);
    EXPECT_LT(p.hold_us(), kMax) << "sample " << i;
    // Nor does it drift back into the first step, where one frame per write would cost ~2x:
    // the two-frame state is stable.
    EXPECT_GE(p.hold_us(), 40'000) << "sample " << i;
  }
  // Busier than the second step's threshold: on to the cap (the 5000-player fan-out).
  feed(p, 0.60, 20);
  EXPECT_EQ(p.hold_us(), kMax);
  EXPECT_DOUBLE_EQ(p.grow_above(), 0.30);
  // A lighter load drifts down across steps when the step below can carry it: 0.15 at three
  // frames is at most 0.225 at two (under 0.25), but 0.30 at one (over 0.20): it stops at two.
  feed(p, 0.15, 100);
  EXPECT_GE(p.hold_us(), 40'000);
  EXPECT_LT(p.hold_us(), kMax);
  // Below busy_low the hold halves, across steps: a worker that went quiet sends at once again.
  feed(p, 0.05, 10);
  EXPECT_EQ(p.hold_us(), 0);
  // Without steps the same load climbs to the cap: the old behaviour, kept for other users.
  MergePolicy flat(kMax);
  feed(flat, 0.30, 10);
  feed(flat, 0.22, 200);
  EXPECT_EQ(flat.hold_us(), kMax);
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

}  // namespace
}  // namespace rill::net
