#include "rill/core/event_timer_queue.h"

#include <event2/event.h>

#include <ctime>

namespace rill {

struct EventTimerQueue::Timer {
  EventTimerQueue* owner;
  TimerId id;
  std::function<void()> fn;
  event* ev = nullptr;
  ~Timer() { if (ev) event_free(ev); }
};

EventTimerQueue::EventTimerQueue(event_base* base) : base_(base) {}
EventTimerQueue::~EventTimerQueue() = default;

TimerId EventTimerQueue::schedule(std::chrono::milliseconds after, std::function<void()> fn) {
  TimerId id = next_id_++;
  auto t = std::make_unique<Timer>();
  t->owner = this;
  t->id = id;
  t->fn = std::move(fn);
  t->ev = evtimer_new(base_, &EventTimerQueue::on_fire, t.get());
  long ms = after.count() < 0 ? 0 : static_cast<long>(after.count());
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  evtimer_add(t->ev, &tv);
  timers_.emplace(id, std::move(t));
  return id;
}

void EventTimerQueue::cancel(TimerId id) { timers_.erase(id); }

int64_t EventTimerQueue::now_ms() const {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void EventTimerQueue::on_fire(int, short, void* arg) {
  auto* t = static_cast<Timer*>(arg);
  EventTimerQueue* self = t->owner;
  auto it = self->timers_.find(t->id);
  if (it == self->timers_.end()) return;
  // Detach before running: the callback may schedule or cancel timers, or destroy the owner of fn.
  std::unique_ptr<Timer> keep = std::move(it->second);
  self->timers_.erase(it);
  keep->fn();
}

}  // namespace rill
