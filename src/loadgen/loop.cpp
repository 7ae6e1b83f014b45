#include "loop.h"

#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <stdexcept>
#include <string>
#include <cstring>

namespace rill::loadgen {

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}

Loop::Loop() : scratch_(256 * 1024) {
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  if (ep_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
}

Loop::~Loop() {
  if (ep_ >= 0) ::close(ep_);
}

bool Loop::add(int fd, IoHandler* handler) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.ptr = handler;
  return epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

void Loop::remove(int fd) { epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr); }

void Loop::at(int64_t when_ns, TimerFn fn) {
  timers_.push_back(Timer{when_ns, seq_++, std::move(fn)});
  std::push_heap(timers_.begin(), timers_.end(), later);
}

void Loop::every(int64_t period_ns, TimerFn fn) {
  // The callback re-arms itself from its own deadline, so the period does not drift.
  auto shared = std::make_shared<TimerFn>(std::move(fn));
  auto next = std::make_shared<int64_t>(now_ns() + period_ns);
  auto tick = std::make_shared<TimerFn>();
  *tick = [this, shared, next, period_ns, weak = std::weak_ptr<TimerFn>(tick)]() {
    (*shared)();
    *next += period_ns;
    int64_t now = now_ns();
    if (*next < now) *next = now;  // fell behind: skip, don't burst
    if (auto t = weak.lock()) at(*next, [t]() { (*t)(); });
  };
  at(*next, [tick]() { (*tick)(); });
}

void Loop::run_timers(int64_t now) {
  while (!timers_.empty() && timers_.front().when <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), later);
    TimerFn fn = std::move(timers_.back().fn);
    timers_.pop_back();
    fn();
  }
}

void Loop::run() {
  constexpr int kMaxEvents = 256;
  epoll_event events[kMaxEvents];
  while (!stopping()) {
    int timeout_ms = 10;  // also bounds how late request_stop() is noticed
    if (!timers_.empty()) {
      int64_t wait = timers_.front().when - now_ns();
      if (wait <= 0) {
        timeout_ms = 0;
      } else {
        timeout_ms = static_cast<int>(std::min<int64_t>(timeout_ms, (wait + kNsPerMs - 1) / kNsPerMs));
      }
    }
    int n = epoll_wait(ep_, events, kMaxEvents, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("epoll_wait: ") + std::strerror(errno));
    }
    for (int i = 0; i < n; ++i) {
      static_cast<IoHandler*>(events[i].data.ptr)->on_io(events[i].events);
    }
    run_timers(now_ns());
  }
}

}  // namespace rill::loadgen
