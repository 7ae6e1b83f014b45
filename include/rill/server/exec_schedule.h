#pragma once
// The pure rules of the exec hooks' children (docs/abr.md), times passed in so that unit tests
// need no clock: when a publish hook's command is started again after it exits, and how many of
// its output lines reach the log.
#include <algorithm>
#include <chrono>
#include <cstdint>

namespace rill::server {

using ExecDuration = std::chrono::milliseconds;

// The back-off's ceiling, and how long a child must have run for its next exit to count as a
// fresh failure (the schedule starts over at `restart`).
inline constexpr ExecDuration kExecMaxRestartDelay{30000};
inline constexpr ExecDuration kExecStableRun{30000};

// The delay before the next start: `restart` after the first exit, then doubling on each exit
// that follows a short run, up to 30 s; `previous` is the delay used before this run (0: none).
inline ExecDuration exec_restart_delay(ExecDuration restart, ExecDuration previous, ExecDuration ran_for) {
  if (previous.count() == 0 || ran_for >= kExecStableRun) return restart;
  const ExecDuration doubled = previous * 2;
  return doubled > kExecMaxRestartDelay ? std::max(restart, kExecMaxRestartDelay) : doubled;
}

// exec_max is a cap for the server: each worker may keep its share of it alive, the shares adding
// up to exec_max (worker `slot` of `workers` gets exec_max / workers, one more for the first
// exec_max % workers slots). A worker whose share is used refuses a start even when another
// worker has room: the workers do not lend each other children.
inline uint32_t exec_worker_share(uint32_t exec_max, uint32_t workers, uint32_t slot) {
  if (workers == 0) return exec_max;
  return exec_max / workers + (slot < exec_max % workers ? 1 : 0);
}

// At most kLines output lines a second per child reach the log; the rest are counted and the
// count is logged once the next second begins.
class ExecLineBudget {
 public:
  static constexpr uint32_t kLines = 20;

  // Whether a line at `now_ms` may be logged. `suppressed` receives the count of lines dropped in
  // the window that just closed (0 when none, or when the window goes on).
  bool take(int64_t now_ms, uint64_t& suppressed) {
    suppressed = 0;
    if (now_ms - window_start_ >= 1000) {
      suppressed = dropped_;
      dropped_ = 0;
      used_ = 0;
      window_start_ = now_ms;
    }
    if (used_ < kLines) {
      ++used_;
      return true;
    }
    ++dropped_;
    return false;
  }
  uint64_t dropped() const { return dropped_; }

 private:
  int64_t window_start_ = INT64_MIN / 2;
  uint32_t used_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace rill::server
