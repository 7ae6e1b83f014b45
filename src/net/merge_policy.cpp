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
  if (load_ > params_.busy_high) {
    const auto step = static_cast<int64_t>(params_.gain_us * (load_ - params_.busy_high));
    hold_us_ = std::min(max_hold_us_, hold_us_ + std::max(kMinHoldUs, step));
  } else {
    // Below the band: halve. Inside it: drift down slowly, so that a hold a burst left behind (a
    // ramp of handshakes) does not stay, and the hold settles at the least that keeps the load
    // under busy_high.
    hold_us_ -= load_ < params_.busy_low ? hold_us_ / 2 : hold_us_ / params_.band_decay;
    if (hold_us_ < kMinHoldUs) hold_us_ = 0;
  }
}

}  // namespace rill::net
