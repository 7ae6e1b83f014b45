// net::SendRing: batched sendmsg through io_uring (send_ring.h).
#include "rill/net/send_ring.h"

#include <errno.h>
#include <sys/socket.h>

#include <cstring>

#ifdef RILL_HAVE_IO_URING
#include <liburing.h>
#endif

namespace rill::net {

#ifdef RILL_HAVE_IO_URING

struct SendRing::Impl {
  io_uring ring{};
  msghdr msgs[kEntries]{};
  ~Impl() { io_uring_queue_exit(&ring); }
};

std::unique_ptr<SendRing> SendRing::create(std::string* error) {
  auto impl = std::make_unique<Impl>();
  io_uring_params params{};
  // One thread submits and reaps (the worker), and completions are only read after each
  // submission: the kernel may skip the cross-thread wake-ups (5.19/6.0; older kernels say EINVAL).
  params.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER;
  params.cq_entries = 2 * kEntries;
  params.flags |= IORING_SETUP_CQSIZE;
  int err = io_uring_queue_init_params(kEntries, &impl->ring, &params);
  if (err == -EINVAL) {
    params = io_uring_params{};
    params.flags = IORING_SETUP_CQSIZE;
    params.cq_entries = 2 * kEntries;
    err = io_uring_queue_init_params(kEntries, &impl->ring, &params);
  }
  if (err < 0) {
    if (error) *error = std::string("io_uring_setup: ") + std::strerror(-err);
    impl.release();  // the ring was never set up: ~Impl must not tear it down
    return nullptr;
  }
  // IORING_OP_SENDMSG is 5.3, the probe 5.6: a kernel that cannot say it has it is not used.
  io_uring_probe* probe = io_uring_get_probe_ring(&impl->ring);
  const bool sendmsg_ok = probe && io_uring_opcode_supported(probe, IORING_OP_SENDMSG);
  if (probe) io_uring_free_probe(probe);
  if (!sendmsg_ok) {
    if (error) *error = "this kernel's io_uring has no IORING_OP_SENDMSG probe (Linux 5.6 or later needed)";
    return nullptr;
  }
  return std::unique_ptr<SendRing>(new SendRing(std::move(impl)));
}

SendRing::SendRing(std::unique_ptr<Impl> impl) : impl_(std::move(impl)), arena_(new iovec[kArenaIovecs]) {}

SendRing::~SendRing() = default;

bool SendRing::has_room(size_t iovecs) const {
  return !broken_ && prepared_ < kEntries && arena_used_ + iovecs <= kArenaIovecs;
}

void SendRing::prepare(int fd, size_t n, uint64_t user) {
  msghdr& msg = impl_->msgs[prepared_];
  msg = msghdr{};
  msg.msg_iov = arena_.get() + arena_used_;
  msg.msg_iovlen = n;
  io_uring_sqe* sqe = io_uring_get_sqe(&impl_->ring);  // has_room() kept one free
  // MSG_DONTWAIT: tried inline, a full socket completes with -EAGAIN (no poll, no later read of
  // the buffers); MSG_NOSIGNAL: a closed peer is -EPIPE, not SIGPIPE.
  io_uring_prep_sendmsg(sqe, fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  io_uring_sqe_set_data64(sqe, user);
  users_[prepared_] = user;
  arena_used_ += n;
  ++prepared_;
}

void SendRing::submit_and_wait(std::vector<Completion>& out) {
  if (prepared_ == 0) return;
  ++submissions_;
  sends_ += prepared_;
  const size_t first = out.size();
  size_t done = 0;
  while (done < prepared_) {
    const int r = io_uring_submit_and_wait(&impl_->ring, 1);
    if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
      // The ring itself failed (never seen; EFAULT, ENXIO): what completed is reported, every
      // other send reports the error, and the ring takes no more (the worker keeps sendmsg).
      reap(out, done);
      for (size_t i = 0; i < prepared_; ++i) {
        bool reported = false;
        for (size_t k = first; k < out.size() && !reported; ++k) reported = out[k].user == users_[i];
        if (!reported) out.push_back({users_[i], r});
      }
      broken_ = true;
      break;
    }
    reap(out, done);
  }
  arena_used_ = 0;
  prepared_ = 0;
}

void SendRing::reap(std::vector<Completion>& out, size_t& done) {
  unsigned head = 0;
  unsigned seen = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring_for_each_cqe(&impl_->ring, head, cqe) {
    out.push_back({io_uring_cqe_get_data64(cqe), cqe->res});
    ++seen;
  }
  io_uring_cq_advance(&impl_->ring, seen);
  done += seen;
}

#else  // built without liburing

struct SendRing::Impl {};

std::unique_ptr<SendRing> SendRing::create(std::string* error) {
  if (error) *error = "built without liburing (install liburing-dev and rebuild)";
  return nullptr;
}

SendRing::SendRing(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SendRing::~SendRing() = default;
bool SendRing::has_room(size_t) const { return false; }
void SendRing::prepare(int, size_t, uint64_t) {}
void SendRing::submit_and_wait(std::vector<Completion>&) {}
void SendRing::reap(std::vector<Completion>&, size_t&) {}

#endif

}  // namespace rill::net
