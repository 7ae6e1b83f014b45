// net::MergePolicy: the `merge_writes: auto` controller (see the header for the why).
#include "rill/net/merge_policy.h"

#include <algorithm>

namespace rill::net {

namespace {
constexpr int64_t kMinHoldUs = 1000;  // shorter holds merge nothing: flush at once instead
}  // namespace

MergePolicy::MergePolicy(int64_t max_hold_us, MergePolicyParams params)
    : max_hold_us_(std::max<int64_t>(0, max_hold_us)), params_(params) {}

void MergePolicy::sample(int64_t cpu_us, int64_t wall_us) {
  if (wall_us <= 0) return;
  const double u = std::clamp(static_cast<double>(cpu_us) / static_cast<double>(wall_us), 0.0, 1.0);
  if (wall_us >= params_.idle_window_us) {
    load_ = u;  // nothing flushed for a long while: the past says nothing about now
    hold_us_ = 0;
    return;
  }
  // The first window has no history to smooth against: taken as it is, so that a worker that
  // starts busy holds from its first window.
  load_ = primed_ ? params_.smoothing * u + (1 - params_.smoothing) * load_ : u;
  primed_ = true;
  const double high = grow_above();
  if (load_ > high) {
    const auto step = static_cast<int64_t>(params_.gain_us * (load_ - high));
    hold_us_ = std::min(max_hold_us_, hold_us_ + std::max(kMinHoldUs, step));
  } else {
    // Below the band: halve. Inside it: drift down slowly, so that a hold a burst left behind (a
    // ramp of handshakes) does not stay, and the hold settles at the least that keeps the load
    // under the growth threshold.
    hold_us_ = load_ < params_.busy_low ? hold_us_ / 2 : drift_down();
    if (hold_us_ < kMinHoldUs) hold_us_ = 0;
  }
}

int64_t MergePolicy::drift_down() const {
  const int64_t next = hold_us_ - hold_us_ / params_.band_decay;
  if (params_.step_us <= 0) return next;
  const int64_t steps = hold_us_ / params_.step_us;  // video frames per write - 1
  // The least hold of this level: the step's base, or at level 1 the shortest hold there is.
  const int64_t base = steps > 0 ? steps * params_.step_us : kMinHoldUs;
  if (next >= base) return next;
  // Down a level every write carries one video frame fewer: the writes grow by (steps + 1) /
  // steps; from level 1 to no hold by about 2 (an AAC track has 43-47 frames a second beside
  // 25-30 video frames, each its own write when nothing waits). The load grows by at most that.
  // Crossed only if that load would still not make the hold grow there; else the hold stays at
  // this level's base (a stable state, not a probe that costs a window at the lower level and
  // comes back).
  const double growth = steps > 0 ? static_cast<double>(steps + 1) / static_cast<double>(steps) : 2.0;
  return load_ * growth > threshold_at(steps) ? base : next;
}

int64_t MergePolicy::level() const {
  if (hold_us_ <= 0) return 0;
  return params_.step_us > 0 ? 1 + hold_us_ / params_.step_us : 1;
}

double MergePolicy::threshold_at(int64_t level) const {
  return params_.busy_high * (1 + params_.step_margin * static_cast<double>(level));
}

double MergePolicy::grow_above() const {
  return params_.step_us > 0 ? threshold_at(level()) : params_.busy_high;
}

}  // namespace rill::net
