#include "rill/net/flush_scheduler.h"

#include <event2/event.h>

#include <algorithm>

namespace rill::net {

FlushScheduler::FlushScheduler(event_base* base, int merge_ms)
    : ev_(event_new(base, -1, 0, &FlushScheduler::on_run, this)), merge_ms_(merge_ms) {}

FlushScheduler::~FlushScheduler() { event_free(ev_); }

void FlushScheduler::request(Flushable* f) {
  if (f->flush_requested_) return;
  f->flush_requested_ = true;
  pending_.push_back(f);
  if (!armed_) {
    armed_ = true;
    if (merge_ms_ > 0) {
      timeval tv{merge_ms_ / 1000, (merge_ms_ % 1000) * 1000};
      event_add(ev_, &tv);
    } else {
      // An activated event joins the loop's active queue behind the callbacks already ready in
      // this iteration, so every write they queue is flushed together.
      event_active(ev_, EV_TIMEOUT, 0);
    }
  }
}

void FlushScheduler::forget(Flushable* f) {
  if (!f->flush_requested_) return;
  f->flush_requested_ = false;
  auto drop = [f](std::vector<Flushable*>& v) { std::replace(v.begin(), v.end(), f, static_cast<Flushable*>(nullptr)); };
  drop(pending_);
  drop(running_);
}

void FlushScheduler::on_run(int, short, void* arg) { static_cast<FlushScheduler*>(arg)->run(); }

void FlushScheduler::run() {
  armed_ = false;
  running_.swap(pending_);
  for (size_t i = 0; i < running_.size(); ++i) {
    Flushable* f = running_[i];
    if (!f) continue;  // forgotten (closed) meanwhile
    f->flush_requested_ = false;
    running_[i] = nullptr;
    f->flush();  // may request() again (lands in pending_ and re-arms) or destroy other flushables
  }
  running_.clear();
}

}  // namespace rill::net
