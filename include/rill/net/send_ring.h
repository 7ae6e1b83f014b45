#pragma once
// SendRing: a worker's io_uring for batched sends (`send_method: io_uring`, docs/configuration.md).
//
// A FlushScheduler batch prepares one IORING_OP_SENDMSG per connection instead of calling
// sendmsg, then submits them all with one io_uring_enter and waits for every completion: a batch
// of a thousand players costs one system call instead of a thousand (scripts/bench-send measured
// 8–12 % less CPU per send on loopback).
//
// Every send carries MSG_DONTWAIT, so the kernel tries it inline during io_uring_enter and a full
// socket completes with -EAGAIN instead of being parked on a poll: when submit_and_wait() returns,
// each send has finished with the caller's bytes and iovecs — nothing is read later, so the
// buffers may be released and the arena reused at once. The msghdr and iovec arrays live here,
// per ring rather than per connection (a thousand connections × IOV_MAX iovecs would cost 16 KB
// each); they are reused after every submission.
//
// Built with liburing when CMake found it (RILL_HAVE_IO_URING); otherwise, or where the kernel
// refuses (seccomp, kernel.io_uring_disabled, an old kernel), create() fails with the reason and
// the worker keeps plain sendmsg.
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rill::net {

class SendRing {
 public:
  // Sends prepared per submission at most; the iovecs of one submission at most.
  static constexpr unsigned kEntries = 512;
  static constexpr size_t kArenaIovecs = 16 * 1024;

  struct Completion {
    uint64_t user = 0;  // what prepare() was given
    int result = 0;     // bytes sent, or -errno
  };

  // A ring, or nullptr with *error saying why the kernel or the build has none.
  static std::unique_ptr<SendRing> create(std::string* error);
  ~SendRing();
  SendRing(const SendRing&) = delete;
  SendRing& operator=(const SendRing&) = delete;

  // Room for n iovecs (n ≤ kArenaIovecs) and one more send: false when the caller must submit
  // first (always false once io_uring_enter itself failed: the caller keeps sendmsg).
  bool has_room(size_t iovecs) const;
  // Iovecs to fill for the next prepare() (has_room(n) must hold).
  iovec* iov_space() { return arena_.get() + arena_used_; }
  // Prepares sendmsg(fd, iov_space()[0..n), MSG_NOSIGNAL | MSG_DONTWAIT), tagged with user.
  void prepare(int fd, size_t n, uint64_t user);
  size_t prepared() const { return prepared_; }
  // Submits what is prepared, waits until every send of it completed and appends their results
  // to out (in completion order). Resets the arena. A no-op when nothing is prepared.
  void submit_and_wait(std::vector<Completion>& out);
  uint64_t submissions() const { return submissions_; }  // io_uring_enter rounds that sent
  uint64_t sends() const { return sends_; }

 private:
  struct Impl;
  explicit SendRing(std::unique_ptr<Impl> impl);
  void reap(std::vector<Completion>& out, size_t& done);

  std::unique_ptr<Impl> impl_;
  std::unique_ptr<iovec[]> arena_;
  size_t arena_used_ = 0;
  size_t prepared_ = 0;
  uint64_t users_[kEntries]{};
  uint64_t submissions_ = 0;
  uint64_t sends_ = 0;
  bool broken_ = false;  // io_uring_enter itself failed: no more sends through this ring
};

}  // namespace rill::net
