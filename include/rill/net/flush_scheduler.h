#pragma once
// FlushScheduler: batches socket writes per event-loop iteration. Whatever a callback queues for
// a connection (one publisher read may fan out a video frame and several audio frames to 1000
// players) is written once, with one writev per connection, when the loop has run the callbacks
// that are ready — never later, and never delayed by a timer: latency is part of the product.
#include <vector>

struct event_base;
struct event;

namespace rill::net {

class Flushable {
 public:
  virtual ~Flushable() = default;
  virtual void flush() = 0;

 private:
  friend class FlushScheduler;
  bool flush_requested_ = false;
};

class FlushScheduler {
 public:
  // merge_ms > 0 (config `merge_writes`): flushes wait that long so that more frames go out per
  // writev; 0 (default): flush in the current loop iteration.
  explicit FlushScheduler(event_base* base, int merge_ms = 0);
  ~FlushScheduler();
  // Idempotent until the flush ran. The Flushable must call forget() before it is destroyed.
  void request(Flushable* f);
  void forget(Flushable* f);

 private:
  static void on_run(int, short, void* arg);
  void run();

  event* ev_;
  int merge_ms_;
  bool armed_ = false;
  std::vector<Flushable*> pending_;
  std::vector<Flushable*> running_;
};

}  // namespace rill::net
