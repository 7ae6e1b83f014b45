#pragma once
// FakeTimerQueue: a manual TimerQueue for unit tests. Time stands still until advance(ms), which
// moves the clock forward and fires every timer that falls due, in due-time order (ties in
// scheduling order), with now_ms() reading each timer's due time while it runs. Timers scheduled
// by a callback fire in the same advance() when they fall due within it (a 0 ms timer fires right
// after the callback that scheduled it). Never fires from inside schedule().
//
// Lives in namespace rill (not a nested "testing" namespace, which would shadow GoogleTest's
// ::testing inside rill code).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

#include "rill/core/timer_queue.h"

namespace rill {

class FakeTimerQueue : public TimerQueue {
 public:
  explicit FakeTimerQueue(int64_t start_ms = 0) : now_(start_ms) {}

  TimerId schedule(std::chrono::milliseconds after, std::function<void()> fn) override {
    const TimerId id = ++next_id_;
    const int64_t due = now_ + (after.count() > 0 ? after.count() : 0);
    timers_.emplace(Key{due, id}, std::move(fn));
    due_of_.emplace(id, due);
    return id;
  }

  void cancel(TimerId id) override {
    auto it = due_of_.find(id);
    if (it == due_of_.end()) return;
    timers_.erase(Key{it->second, id});
    due_of_.erase(it);
  }

  int64_t now_ms() const override { return now_; }

  // Moves the clock forward by ms, firing due timers in order. Returns how many fired.
  size_t advance(int64_t ms) {
    const int64_t target = now_ + (ms > 0 ? ms : 0);
    size_t fired = 0;
    while (!timers_.empty() && timers_.begin()->first.first <= target) {
      auto node = timers_.extract(timers_.begin());
      due_of_.erase(node.key().second);
      now_ = node.key().first;
      ++fired;
      node.mapped()();
    }
    now_ = target;
    return fired;
  }
  size_t advance(std::chrono::milliseconds ms) { return advance(static_cast<int64_t>(ms.count())); }
  // Fires what is due now (0 ms timers included) without moving the clock.
  size_t run_due() { return advance(0); }

  size_t pending() const { return timers_.size(); }
  bool is_pending(TimerId id) const { return due_of_.count(id) != 0; }
  // Due time of the earliest pending timer, or -1 when none is pending.
  int64_t next_due_ms() const { return timers_.empty() ? -1 : timers_.begin()->first.first; }

 private:
  using Key = std::pair<int64_t, TimerId>;  // (due, id): ids grow, so ties fire in scheduling order
  int64_t now_;
  TimerId next_id_ = 0;
  std::map<Key, std::function<void()>> timers_;
  std::unordered_map<TimerId, int64_t> due_of_;
};

}  // namespace rill
