// net::Connection: the socket life cycle, the read loop and the plain (TCP/Unix) flavour.
#include "rill/net/connection.h"

#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

namespace rill::net {

namespace {
// A sendmsg takes at most IOV_MAX buffers; more stay queued for the next call.
constexpr size_t kMaxIov = IOV_MAX < 1024 ? IOV_MAX : 1024;
}  // namespace

Connection::Connection(event_base* base, FlushScheduler& flusher, UniqueFd fd, std::string peer)
    : flusher_(flusher),
      fd_(std::move(fd)),
      queue_(media::QueueLimits{}),
      peer_(std::move(peer)),
      read_ev_(event_new(base, fd_.get(), EV_READ | EV_PERSIST, &Connection::on_read_event, this)),
      write_ev_(event_new(base, fd_.get(), EV_WRITE | EV_PERSIST, &Connection::on_write_event, this)) {}

Connection::~Connection() {
  if (alive_) *alive_ = false;
  if (state_ != State::Closed) teardown();
}

void Connection::start(ConnectionHandler& handler) {
  handler_ = &handler;
  reading_ = true;
  update_read_event();
  if (state_ != State::Closed)
    flusher_.request_now(this);  // what was queued before; a TLS client's first flight
}

void Connection::set_queue_limits(const media::QueueLimits& limits) {
  // Called from on_data (a connect command), never inside a flush batch: no send is in a ring.
  media::OutputQueue fresh(limits);
  queue_.drain_to([&](const BufferRef& b, size_t off, size_t len) {
    // Only the head can be partly written; its rest is copied (once, at connect time).
    fresh.push_control(off == 0 && len == b.size() ? b : SharedBuffer::copy_of(b.span().subspan(off, len)));
  });
  queue_ = std::move(fresh);
}

void Connection::send(BufferRef bytes) {
  if (state_ == State::Closed) return;
  queue_.push_control(std::move(bytes));
  flusher_.request_now(this);
}

void Connection::pause_reading() {
  reading_ = false;
  update_read_event();
}

void Connection::resume_reading() {
  if (reading_ || !handler_) return;
  reading_ = true;
  update_read_event();
  if (buffered_input()) kick_read();
}

void Connection::update_read_event() {
  const bool want = state_ != State::Closed && wants_read_event();
  if (want == read_armed_) return;
  if (want) {
    event_add(read_ev_.get(), nullptr);
  } else {
    event_del(read_ev_.get());
  }
  read_armed_ = want;
}

void Connection::wait_writable(bool on) {
  if (on == write_armed_ || state_ == State::Closed) return;
  if (on) {
    event_add(write_ev_.get(), nullptr);
  } else {
    event_del(write_ev_.get());
  }
  write_armed_ = on;
}

// ---------------------------------------------------------------- end

void Connection::teardown() {
  state_ = State::Closed;
  flusher_.forget(this);
  read_ev_.reset();
  write_ev_.reset();
  read_armed_ = write_armed_ = write_event_pinned_ = false;
  queue_.clear();
  staged_bytes_ = 0;
  file_.reset();
  file_sent_ = 0;
  fd_.reset();
}

void Connection::close(std::string_view reason) {
  if (state_ == State::Closed) return;
  close_reason_ = reason;
  before_close();
  teardown();
}

void Connection::close_after_flush(std::string_view reason) {
  if (state_ != State::Open) return;
  state_ = State::Closing;
  close_reason_ = reason;
  update_read_event();
  flush_now();  // closes from flush() once the queue is empty, in this loop iteration
}

void Connection::finish(std::string reason) {
  close(reason);
  if (handler_) survives([&] { handler_->on_close(reason); });
}

void Connection::fail(std::string reason) {
  if (state_ == State::Closed) return;
  finish(std::move(reason));
}

void Connection::kick_read() {
  if (state_ == State::Open && reading_) event_active(read_ev_.get(), EV_READ, 0);
}

void Connection::flushed() {
  if (!write_event_pinned_) wait_writable(false);
  if (state_ == State::Closing) return finish(close_reason_);
  if (state_ == State::Open && handler_) survives([&] { handler_->on_drained(); });
}

// ---------------------------------------------------------------- input

void Connection::on_read_event(int, short, void* arg) { static_cast<Connection*>(arg)->on_readable(); }

void Connection::on_write_event(int, short, void* arg) { static_cast<Connection*>(arg)->on_writable(); }

bool Connection::read_loop() {
  uint8_t buf[kReadSlice];
  size_t total = 0;
  while (state_ == State::Open && reading_ && total < kMaxReadPerEvent) {
    ReadResult r = read_some(buf, sizeof buf);
    if (r.status == ReadResult::Again) return true;
    if (r.status == ReadResult::Eof || r.status == ReadResult::Error) {
      fail(r.status == ReadResult::Eof ? std::string("peer closed") : std::move(r.error));
      return false;  // closed, perhaps destroyed: touch nothing
    }
    total += r.n;
    bytes_in_ += r.n;
    if (!survives([&] { handler_->on_data({buf, r.n}); })) return false;
    if (!r.more) return true;
  }
  // Out of budget (or paused) with input left: a plain socket stays readable (level-triggered),
  // but bytes that TLS already decrypted would wait for the next packet.
  if (buffered_input()) kick_read();
  return state_ != State::Closed;
}

// ---------------------------------------------------------------- plain

Connection::ReadResult PlainConnection::read_some(uint8_t* buf, size_t len) {
  for (;;) {
    const ssize_t n = ::read(fd_.get(), buf, len);
    if (n > 0) return {ReadResult::Data, static_cast<size_t>(n), static_cast<size_t>(n) == len, {}};
    if (n == 0) return {ReadResult::Eof, 0, false, {}};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
    return {ReadResult::Error, 0, false, std::string("read: ") + std::strerror(errno)};
  }
}

void PlainConnection::flush() {
  if (state_ == State::Closed || send_in_ring()) return;  // ring_sent() goes on from there
  // With a file behind the queue (a response head) this connection sends on its own: the head
  // needs MSG_MORE, and sendfile has no ring path here.
  if (!file_ && flusher_.send_via_ring(this, fd_.get(), queue_, kMaxIov)) return;
  iovec iov[kMaxIov];
  while (!queue_.empty()) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = queue_.fill_iov(iov, kMaxIov);
    // sendmsg is writev with flags: MSG_NOSIGNAL turns a closed peer into EPIPE, not SIGPIPE.
    const ssize_t w = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | (file_ ? MSG_MORE : 0));
    if (!sent(w < 0 ? -errno : w)) return;
  }
  if (file_ && !send_file_rest()) return;
  flushed();
}

bool PlainConnection::send_file(std::shared_ptr<const FileBody> file) {
  if (state_ == State::Closed || file_ || !file || !file->fd) return false;
  if (file->size == 0) return true;
  file_ = std::move(file);
  file_sent_ = 0;
  flusher_.request_now(this);
  return true;
}

bool PlainConnection::send_file_rest() {
  while (file_sent_ < file_->size) {
    // sendfile(2) has no MSG_NOSIGNAL: the worker ignores SIGPIPE (process/signals.cpp), so a
    // closed peer reads as EPIPE here too.
    off_t offset = static_cast<off_t>(file_sent_);
    const ssize_t w = ::sendfile(fd_.get(), file_->fd.get(), &offset, file_->size - file_sent_);
    if (w > 0) {
      file_sent_ += static_cast<size_t>(w);
      bytes_out_ += static_cast<uint64_t>(w);
    } else if (!write_failed(w < 0 ? -errno : -EIO)) {  // 0: the file is shorter than it said
      return false;
    }
  }
  file_.reset();
  file_sent_ = 0;
  return true;
}

void PlainConnection::ring_sent(int result) {
  if (state_ == State::Closed) return;
  if (sent(result)) flush();  // the rest, or flushed() when nothing is left
}

bool PlainConnection::sent(ssize_t w) {
  if (w > 0) {
    queue_.consume(static_cast<size_t>(w));
    bytes_out_ += static_cast<uint64_t>(w);
    return true;
  }
  return write_failed(w);
}

bool PlainConnection::write_failed(ssize_t w) {
  if (w == -EINTR) return true;
  if (w == -EAGAIN || w == -EWOULDBLOCK) {
    wait_writable(true);
    return false;
  }
  if (w == -EPIPE) {
    fail("peer closed");
  } else if (w == 0) {
    fail("write: no progress");
  } else {
    fail(std::string("write: ") + std::strerror(static_cast<int>(-w)));
  }
  return false;
}

}  // namespace rill::net
