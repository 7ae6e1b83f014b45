#pragma once
// One worker's core for unit tests and micro-benchmarks: an event base, its timers and flusher,
// the stream registry and the sessions, and the net::WorkerCore that names them — built in the
// order a worker builds them and torn down in reverse, so the event base outlives everything that
// registered an event on it (a fixture that freed the base in its destructor body left the
// flusher's event to be freed into a dead base: valgrind's invalid read). Services of the layers
// above (locator, gate, cluster, ...) are a fixture's own members, declared after the TestWorker
// so that they go first, and built on core() with the others they use passed to their
// constructors, as server::Worker builds them.
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

class TestWorker {
 public:
  explicit TestWorker(config::Config cfg, media::OutputFactory outputs = media::default_outputs)
      : timers_(base_.get()),
        flusher_(base_.get()),
        streams_(timers_, core::make_null_logger(), std::move(outputs)),
        sessions_(timers_) {
    core_.base = base_.get();
    core_.config = std::make_shared<const config::Config>(std::move(cfg));
    core_.streams = &streams_;
    core_.flusher = &flusher_;
    core_.timers = &timers_;
    core_.sessions = &sessions_;
    core_.log = core::make_null_logger();
  }
  TestWorker(const TestWorker&) = delete;
  TestWorker& operator=(const TestWorker&) = delete;

  net::WorkerCore& core() { return core_; }
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
  net::WorkerCore core_;
};

}  // namespace rill::testsupport
