#pragma once
// TimerQueue on a libevent event_base: one `event` per pending timer.
#include <memory>
#include <unordered_map>

#include "rill/core/timer_queue.h"

struct event_base;
struct event;

namespace rill {

class EventTimerQueue final : public TimerQueue {
 public:
  explicit EventTimerQueue(event_base* base);
  ~EventTimerQueue() override;
  TimerId schedule(std::chrono::milliseconds after, std::function<void()> fn) override;
  void cancel(TimerId id) override;
  int64_t now_ms() const override;
  size_t pending() const { return timers_.size(); }

 private:
  struct Timer;
  static void on_fire(int, short, void* arg);

  event_base* base_;
  TimerId next_id_ = 1;
  std::unordered_map<TimerId, std::unique_ptr<Timer>> timers_;
};

}  // namespace rill
