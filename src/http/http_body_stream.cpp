#include "rill/http/http_body_stream.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <utility>

#include "rill/core/event_timer_queue.h"
#include "rill/protocol/http_chunk.h"

namespace rill::http {

HttpBodyStream::HttpBodyStream(net::WorkerCore& ctx, HttpStreamHandover handover, Closed on_closed)
    : ctx_(ctx),
      conn_(std::move(handover.conn)),
      release_slot_(std::move(handover.release_slot)),
      chunked_(handover.chunked),
      // The head is queued (behind what the connection sent before, keep-alive responses).
      head_end_(conn_->bytes_out() + conn_->queued_bytes()),
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

void HttpBodyStream::push_control(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;  // an empty chunk would be the last one
  if (chunked_) {
    conn_->queue().push_control(SharedBuffer::copy_of(std::string_view(protocol::http_chunk(bytes))));
  } else {
    conn_->queue().push_control(SharedBuffer::copy_of(bytes));
  }
}

void HttpBodyStream::end(std::chrono::milliseconds linger) {
  if (!conn_->is_open()) return;
  if (chunked_) conn_->queue().push_control(SharedBuffer::copy_of(protocol::kHttpLastChunk));
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
  release_slot();
  if (linger_timer_) ctx_.timers->cancel(std::exchange(linger_timer_, 0));
  if (on_closed_) on_closed_(reason);
}

}  // namespace rill::http
