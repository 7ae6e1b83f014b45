#pragma once
// One worker's core for unit tests and micro-benchmarks: an event base, its timers and flusher,
// the stream registry and the sessions, and the WorkerCore that names them — built in the
// order a worker builds them and torn down in reverse, so the event base outlives everything that
// registered an event on it (a fixture that freed the base in its destructor body left the
// flusher's event to be freed into a dead base: valgrind's invalid read). Services of the layers
// above (locator, gate, cluster, ...) are a fixture's own members, declared after the core so that
// they go first; the fixture names them in ctx() as the worker's assembly does.
#include <event2/event.h>

#include <chrono>
#include <memory>
#include <utility>

#include "rill/config/config.h"
#include "rill/core/event_timer_queue.h"
#include "rill/core/log.h"
#include "rill/media/stream.h"
#include "rill/media/stream_output.h"
#include "rill/net/flush_scheduler.h"
#include "rill/net/worker_core.h"

namespace rill::testsupport {

// Owns an event_base (freed last of all when it is a class's first member).
class EventBase {
 public:
  EventBase() : base_(event_base_new()) {}
  ~EventBase() { event_base_free(base_); }
  EventBase(const EventBase&) = delete;
  EventBase& operator=(const EventBase&) = delete;
  event_base* get() const { return base_; }

 private:
  event_base* base_;
};

class WorkerCore {
 public:
  explicit WorkerCore(config::Config cfg, media::OutputFactory outputs = media::default_outputs)
      : timers_(base_.get()),
        flusher_(base_.get()),
        streams_(timers_, core::make_null_logger(), std::move(outputs)),
        sessions_(timers_) {
    ctx_.base = base_.get();
    ctx_.config = std::make_shared<const config::Config>(std::move(cfg));
    ctx_.streams = &streams_;
    ctx_.flusher = &flusher_;
    ctx_.timers = &timers_;
    ctx_.sessions = &sessions_;
    ctx_.log = core::make_null_logger();
  }
  WorkerCore(const WorkerCore&) = delete;
  WorkerCore& operator=(const WorkerCore&) = delete;

  net::WorkerCore& ctx() { return ctx_; }
  event_base* base() const { return base_.get(); }
  EventTimerQueue& timers() { return timers_; }
  media::StreamRegistry& streams() { return streams_; }
  net::SessionSet& sessions() { return sessions_; }

  // Runs the loop in 10 ms steps until pred() holds or `limit` passed; returns pred().
  template <class P>
  bool run_until(P pred, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    for (auto left = limit; !pred() && left.count() > 0; left -= std::chrono::milliseconds(10)) {
      timeval tv{0, 10'000};
      event_base_loopexit(base_.get(), &tv);
      event_base_dispatch(base_.get());
    }
    return pred();
  }

 private:
  EventBase base_;  // first: destroyed last
  EventTimerQueue timers_;
  net::FlushScheduler flusher_;
  media::StreamRegistry streams_;
  net::SessionSet sessions_;
  net::WorkerCore ctx_;
};

}  // namespace rill::testsupport
