#include "rill/net/blocking_work_thread.h"

#include <event2/event.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <system_error>

namespace rill::net {

BlockingWorkThread::BlockingWorkThread(event_base* base, size_t max_queued) : max_queued_(max_queued) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  wake_ev_ = event_new(base, wake_fd_, EV_READ | EV_PERSIST, &BlockingWorkThread::on_wake, this);
  if (!wake_ev_ || event_add(wake_ev_, nullptr) != 0) {
    if (wake_ev_) event_free(wake_ev_);
    ::close(wake_fd_);
    throw std::runtime_error("blocking work thread: cannot watch its eventfd");
  }
  thread_ = std::thread([this] { run(); });
}

BlockingWorkThread::~BlockingWorkThread() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  thread_.join();
  event_free(wake_ev_);
  ::close(wake_fd_);
}

bool BlockingWorkThread::submit(Job job) {
  {
    std::lock_guard lock(mu_);
    if (jobs_.size() >= max_queued_) return false;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void BlockingWorkThread::wait_idle() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return jobs_.empty() && !busy_; });
}

void BlockingWorkThread::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lock.unlock();
    Continuation next = job();
    job = nullptr;
    lock.lock();
    busy_ = false;
    if (next) {
      done_.push_back(std::move(next));
      const uint64_t one = 1;
      [[maybe_unused]] const ssize_t w = ::write(wake_fd_, &one, sizeof one);
    }
    idle_cv_.notify_all();
  }
}

void BlockingWorkThread::on_wake(int fd, short, void* arg) {
  auto* self = static_cast<BlockingWorkThread*>(arg);
  uint64_t n = 0;
  [[maybe_unused]] const ssize_t r = ::read(fd, &n, sizeof n);
  std::deque<Continuation> ready;
  {
    std::lock_guard lock(self->mu_);
    ready.swap(self->done_);
  }
  for (Continuation& c : ready) c();
}

}  // namespace rill::net
