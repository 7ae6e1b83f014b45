#include "rill/server/http_body_stream.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <utility>

#include "rill/core/event_timer_queue.h"

namespace rill::server {

namespace {

// RFC 9112 §7.1: chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF; chunk-size = 1*HEXDIG.
// Written into `line` when nothing else holds it any more (the previous batch was sent, which
// is when the next one is framed), so a steady stream reuses one buffer for every chunk.
void write_chunk_size_line(BufferRef& line, size_t n) {
  constexpr size_t kCapacity = 2 * sizeof(size_t) + 2;
  if (!line || line->use_count() > 1) line = SharedBuffer::create(kCapacity);
  char hex[2 * sizeof(size_t)];
  size_t len = 0;
  do {
    hex[sizeof hex - ++len] = "0123456789abcdef"[n & 0xf];
    n >>= 4;
  } while (n != 0);
  line->resize(0);
  line->append(hex + sizeof hex - len, len);
  line->append("\r\n", 2);
}

}  // namespace

HttpBodyStream::HttpBodyStream(net::ServerContext& ctx, HttpStreamHandover handover,
                               media::QueueLimits limits, Closed on_closed)
    : ctx_(ctx),
      conn_(std::move(handover.conn)),
      release_slot_(std::move(handover.release_slot)),
      pending_(limits),
      crlf_(SharedBuffer::copy_of(std::string_view("\r\n"))),
      chunked_(handover.chunked),
      on_closed_(std::move(on_closed)) {
  // As for an RTMP player: a batch goes out when it is written, not when the previous is acked.
  int one = 1;
  if (conn_->fd() >= 0) ::setsockopt(conn_->fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

HttpBodyStream::~HttpBodyStream() {
  if (linger_timer_) ctx_.timers->cancel(linger_timer_);
  conn_.reset();  // closes the socket (if still open) before the slot is given back
  release_slot();
}

void HttpBodyStream::start() { conn_->start(*this); }

void HttpBodyStream::release_slot() {
  if (auto f = std::exchange(release_slot_, nullptr)) f();
}

void HttpBodyStream::flush() {
  if (!conn_->is_open() || pending_.empty()) return;
  if (conn_->queued_bytes() > 0) return;  // the previous batch is on its way: on_drained() calls again
  move_pending();
  conn_->flush();  // may end in on_drained() (nothing left pending) or in on_close()
}

void HttpBodyStream::move_pending() {
  const size_t n = pending_.bytes();
  if (n == 0) return;
  media::OutputQueue& out = conn_->queue();
  if (chunked_) {
    write_chunk_size_line(size_line_, n);
    pending_.push_front_control(size_line_);
    pending_.push_control(crlf_);
  }
  pending_.move_all_to(out);  // whole, in O(1), when the previous batch is gone (the usual case)
  body_bytes_ += n;
}

void HttpBodyStream::end(std::chrono::milliseconds linger) {
  if (!conn_->is_open()) return;
  // The end must go out whole: what is pending joins the queue even behind a batch in flight.
  move_pending();
  if (chunked_)
    conn_->queue().push_control(SharedBuffer::copy_of(std::string_view("0\r\n\r\n")));  // last-chunk
  conn_->close_after_flush("stream ended");
  if (!open()) return;  // on_close() ran
  linger_timer_ = ctx_.timers->schedule(linger, [this] {
    linger_timer_ = 0;
    if (!open()) return;
    conn_->close("end not read in time");
    closed("end not read in time");
  });
}

void HttpBodyStream::close(std::string_view reason) {
  conn_->close(reason);
  pending_.clear();
  release_slot();
}

void HttpBodyStream::on_data(std::span<const uint8_t> bytes) {
  // A player sends nothing after its request; a few bytes (a pipelined request) are ignored.
  ignored_in_ += bytes.size();
  if (ignored_in_ <= kMaxIgnoredInput) return;
  conn_->close("client kept sending");
  closed("client kept sending after its request");
}

void HttpBodyStream::on_close(const std::string& reason) { closed(reason); }

void HttpBodyStream::closed(const std::string& reason) {
  pending_.clear();
  release_slot();
  if (linger_timer_) ctx_.timers->cancel(std::exchange(linger_timer_, 0));
  if (on_closed_) on_closed_(reason);
}

}  // namespace rill::server
