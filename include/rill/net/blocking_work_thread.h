#pragma once
// BlockingWorkThread: one thread of a worker for work that may block (directory scans, reading
// recording files), so that the worker's event loop never does. A job runs on the thread and
// returns a continuation, which runs afterwards on the event loop (woken through an eventfd).
// Jobs run one at a time, in order; the queue is bounded.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

struct event;
struct event_base;

namespace rill::net {

class BlockingWorkThread {
 public:
  using Continuation = std::function<void()>;
  using Job = std::function<Continuation()>;

  BlockingWorkThread(event_base* base, size_t max_queued = 64);
  // Waits for the job running (if any), drops the others; no continuation runs afterwards.
  ~BlockingWorkThread();
  BlockingWorkThread(const BlockingWorkThread&) = delete;
  BlockingWorkThread& operator=(const BlockingWorkThread&) = delete;

  // Queues `job` (its continuation may be empty). False, with nothing queued, when max_queued jobs
  // are waiting already. Called from the loop.
  bool submit(Job job);

  // For tests: blocks until every job queued so far has run on the thread (not its continuation).
  void wait_idle();

 private:
  static void on_wake(int fd, short, void* arg);
  void run();

  const size_t max_queued_;
  int wake_fd_ = -1;
  event* wake_ev_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Job> jobs_;                  // guarded by mu_
  std::deque<Continuation> done_;         // guarded by mu_
  bool stopping_ = false, busy_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace rill::net
