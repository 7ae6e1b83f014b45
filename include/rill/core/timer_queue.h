#pragma once
// TimerQueue: the only clock the hub (media/) sees. The worker implements it on libevent
// (core/event_timer_queue); unit tests use a manual fake, so hub behaviour over time is tested
// without sleeping.
#include <chrono>
#include <cstdint>
#include <functional>

namespace rill {

using TimerId = uint64_t;

class TimerQueue {
 public:
  virtual ~TimerQueue() = default;
  // Runs fn once after `after`, from the event loop (never from inside schedule()).
  virtual TimerId schedule(std::chrono::milliseconds after, std::function<void()> fn) = 0;
  // Cancelling an unknown, fired or already cancelled id is a no-op.
  virtual void cancel(TimerId id) = 0;
  // Monotonic milliseconds.
  virtual int64_t now_ms() const = 0;
};

}  // namespace rill
