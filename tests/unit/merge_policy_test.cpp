// net::MergePolicy, fed synthetic load samples (no clock). FlushScheduler, which applies it, has
// its own tests (flush_scheduler_test.cpp).
#include "rill/net/merge_policy.h"

#include <gtest/gtest.h>

#include <algorithm>

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

TEST(MergePolicy, EachVideoLevelTakenNeedsMoreLoadToGrowFurther) {
  MergePolicyParams stepped;
  stepped.step_us = 40'000;  // FlushScheduler::kVideoPaceUs
  MergePolicy p(kMax, stepped);
  EXPECT_EQ(p.level(), 0);
  EXPECT_DOUBLE_EQ(p.grow_above(), 0.20);
  // Busy unheld: into level 1 (audio waits for video), where up to 40 % of a core is carried
  // without a video frame waiting (1000 players at 750 kbps take ~19 % there).
  feed(p, 0.30);
  ASSERT_EQ(p.level(), 1);
  EXPECT_DOUBLE_EQ(p.grow_above(), 0.40);
  for (int i = 0; i < 40; ++i) {
    feed(p, 0.35);
    EXPECT_EQ(p.level(), 1) << "sample " << i;
  }
  // Busier (5000 players at 200 kbps: ~74 % at level 1): two video frames a write.
  feed(p, 0.75, 3);
  ASSERT_EQ(p.level(), 2);
  EXPECT_DOUBLE_EQ(p.grow_above(), 0.60);
  // There ~42 %: stays — under the next threshold, and one frame a write would cost up to twice
  // that, over level 1's threshold: the two-frame state is stable.
  for (int i = 0; i < 200; ++i) {
    feed(p, 0.42);
    EXPECT_EQ(p.level(), 2) << "sample " << i;
  }
  // Saturated: on to the cap.
  feed(p, 1.0, 10);
  EXPECT_EQ(p.hold_us(), kMax);
  EXPECT_EQ(p.level(), 3);
  // A lighter load drifts down a level when the level below can carry it: 0.25 at three frames
  // is at most 0.375 at two (under 0.60), and 0.5 at one (over 0.40): it stops at two.
  feed(p, 0.25, 100);
  EXPECT_EQ(p.level(), 2);
  // 0.15 at two is at most 0.30 at one: down to level 1.
  feed(p, 0.15, 40);
  EXPECT_EQ(p.level(), 1);
  // Below busy_low the hold halves, across levels: a worker that went quiet sends at once again.
  feed(p, 1.0, 10);
  ASSERT_EQ(p.level(), 3);
  feed(p, 0.05, 10);
  EXPECT_EQ(p.hold_us(), 0);
  // Without levels the same load climbs to the cap: the old behaviour, kept for other users.
  MergePolicy flat(kMax);
  feed(flat, 0.30, 10);
  feed(flat, 0.22, 200);
  EXPECT_EQ(flat.hold_us(), kMax);
  EXPECT_EQ(flat.level(), 1);
}

}  // namespace
}  // namespace rill::net
