#pragma once
// MergePolicy: how long the worker holds player writes (`merge_writes: auto`), from its load.
//
// Signal: the worker thread's CPU utilization (thread CPU time / wall time) over windows of
// ~250 ms, measured by FlushScheduler. CPU time counts what merging saves — the kernel's work
// per sendmsg and TCP segment is charged to the sending thread — and, unlike wall time in
// callbacks, it ignores the time the thread waited for a core on a shared machine. Send counts
// were the alternative; they miss the per-byte cost (200 players at 4 Mbps vs 1000 at 750 kbps:
// same Gbps, a fifth of the sends, a quarter of the CPU).
//
// Controller (pure: fed samples, no clock): an EWMA of the utilization drives the hold time
// with a hysteresis band, like a thermostat:
//  - above `busy_high` (raised per level, below): hold longer, by an amount proportional to the excess
//  (additive increase;
//    merging then cuts the cost per byte until the load falls back into the band);
//  - inside [busy_low, that]: let the hold drift down slowly (1/16 a window) — merging is
//    what keeps the load there; the slow drift finds the least hold that does, and forgets a hold
//    a short burst (a ramp of handshakes) caused. The band is wider than the load change one
//    step causes, so the hold settles instead of oscillating;
//  - below `busy_low`: halve it (multiplicative decrease; < 1 ms is 0): a worker that went quiet
//    soon sends at once again;
//  - a window of 1 s or more without a flush (the worker was idle): back to 0 at once.
// Levels (`step_us`, FlushScheduler's video pacing): 0 is no hold; any hold under `step_us` is
// level 1 — audio waits for the next video frame, which leaves at once (25 writes a second per
// player at 25 fps instead of ~68); each further `step_us` puts one more video frame in a write
// and adds a frame interval to every player's latency, while saving less than the level before.
// Measured on the bench (1000 players at 750 kbps: ~45 % of a core unheld, ~19 % at level 1, ~14 %
// at level 2; 5000 at 200 kbps: saturated, ~74 %, ~42 %), level 1 is nearly free in latency and
// takes most of the saving, level 2 is worth its frame interval only to a worker that level 1
// leaves busy. So each level raises the load it takes to grow further by `step_margin` ×
// busy_high (20 %, 40 %, 60 % of a core), and the in-band drift crosses down into a lower level
// only when the load there (estimated: the writes grow by (steps + 1) / steps) would not make the
// hold grow again at once — otherwise a worker just above a threshold climbs and comes back over
// and over, and its p99 latency is the higher level's.
// An idle or lightly loaded worker (the default band: under 20 % of a core) therefore adds no
// latency at all; a busy one trades up to `max` of latency for fewer, larger writes.
#include <cstdint>

namespace rill::net {

struct MergePolicyParams {
  double busy_low = 0.12;              // below: halve the hold
  double busy_high = 0.20;             // above: lengthen it
  double smoothing = 0.5;              // EWMA weight of a new sample
  double gain_us = 100'000;            // hold added per sample per unit of utilization above busy_high
  int64_t idle_window_us = 1'000'000;  // a window this long had no flush: the worker is idle
  int64_t band_decay = 16;             // inside the band the hold loses 1/band_decay a window
  int64_t step_us = 0;                 // the hold's levels (video pacing); 0: no levels
  double step_margin = 1.0;            // each level raises busy_high by this fraction of it
};

class MergePolicy {
 public:
  explicit MergePolicy(int64_t max_hold_us, MergePolicyParams params = {});

  // One window: the thread used cpu_us of CPU over wall_us of wall-clock time.
  void sample(int64_t cpu_us, int64_t wall_us);

  int64_t hold_us() const { return hold_us_; }  // 0: flush in this loop iteration
  double load() const { return load_; }         // smoothed utilization, 0..1
  int64_t max_hold_us() const { return max_hold_us_; }
  // The load above which the hold grows, at the current hold (busy_high raised per level).
  double grow_above() const;
  // 0: no hold; 1: a hold under step_us (or any hold without levels); k: k video frames a write.
  int64_t level() const;

 private:
  int64_t drift_down() const;                // the in-band hold of the next window
  double threshold_at(int64_t level) const;  // grow_above() at that level
  int64_t max_hold_us_;
  MergePolicyParams params_;
  double load_ = 0;
  bool primed_ = false;  // a sample was taken
  int64_t hold_us_ = 0;
};

}  // namespace rill::net
