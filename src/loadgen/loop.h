#pragma once
// rill-bench: one epoll event loop per thread, with one-shot timers.
//
// Sockets are registered edge-triggered for reading and writing at once (EPOLLIN | EPOLLOUT |
// EPOLLRDHUP | EPOLLET), so a connection never has to re-arm interest: it reads until EAGAIN on
// every wake-up and writes until EAGAIN whenever it has something queued. That keeps the loop to
// one epoll_ctl per connection lifetime, which matters with thousands of players on one core.
//
// Timers are a binary heap of (deadline, callback); the loop is single-threaded and nothing in it
// takes a lock. The only cross-thread entry point is request_stop().
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace rill::loadgen {

// CLOCK_MONOTONIC in nanoseconds: every time in rill-bench is measured on this clock.
int64_t now_ns();

inline constexpr int64_t kNsPerMs = 1'000'000;
inline constexpr int64_t kNsPerSec = 1'000'000'000;

class IoHandler {
 public:
  // `events` is the epoll event mask (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP, EPOLLRDHUP).
  virtual void on_io(uint32_t events) = 0;

 protected:
  ~IoHandler() = default;
};

class Loop {
 public:
  using TimerFn = std::function<void()>;

  Loop();
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // Registers fd edge-triggered for input and output. Returns false (errno set) on failure.
  bool add(int fd, IoHandler* handler);
  // Unregisters fd (call before closing it).
  void remove(int fd);

  // Runs fn once at (or soon after) the monotonic time when_ns.
  void at(int64_t when_ns, TimerFn fn);
  // Runs fn every period_ns, first at now + period_ns, until the loop stops.
  void every(int64_t period_ns, TimerFn fn);

  // Runs until request_stop() (from any thread) or stop() (from inside the loop).
  void run();
  void request_stop() { stop_.store(true, std::memory_order_relaxed); }
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }

  // One read buffer shared by every connection of this loop: a connection parses what it read
  // before returning to the loop, so no connection needs a read buffer of its own.
  std::span<uint8_t> scratch() { return scratch_; }

 private:
  struct Timer {
    int64_t when;
    uint64_t seq;
    TimerFn fn;
  };
  static bool later(const Timer& a, const Timer& b) {
    return a.when != b.when ? a.when > b.when : a.seq > b.seq;
  }
  void run_timers(int64_t now);

  int ep_ = -1;
  std::atomic<bool> stop_{false};
  std::vector<Timer> timers_;  // min-heap on (when, seq)
  uint64_t seq_ = 0;
  std::vector<uint8_t> scratch_;
};

}  // namespace rill::loadgen
