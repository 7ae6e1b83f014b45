#pragma once
// HttpBodyStream: the streamed body of one HTTP response on a connection handed over by
// HttpExchange::take_stream() (the response head already queued), written like an RTMP player's:
// the net::Connection (plain or TLS) sends the shared, already-serialized buffers with one
// sendmsg per flush (TLS: one record per 16 KiB), never copied on a plain connection.
//
// One queue, the connection's (connection().queue()): the session that owns the body sets its
// limits and pushes its items there already framed — with chunked framing (HTTP/1.1) each item is
// one whole chunk, so shared buffers framed once serve every client and a flush adds nothing of
// its own; HTTP/1.0 gets a close-delimited body, the same items unframed. What the items are (the
// FLV tags of server/http_flv_session.h) and when one may be dropped is the session's business:
// this class knows no media, only bytes, framing and the connection's end.
//
// What the client sends after its request is read and discarded (bounded): reading is how a
// client that went away is noticed at once.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "rill/http/http_exchange.h"
#include "rill/net/connection.h"
#include "rill/net/worker_core.h"

namespace rill::http {

class HttpBodyStream final : private net::ConnectionHandler {
 public:
  // Told once when the connection ended by itself: the client left, an I/O error, end() done
  // (or timed out). Never for close().
  using Closed = std::function<void(const std::string& reason)>;
  static constexpr uint64_t kMaxIgnoredInput = 64 * 1024;  // bytes a client may send after its request

  // The handover's connection (its head queued) becomes this object's; its slot is released once,
  // when the body ends or at the latest on destruction.
  HttpBodyStream(net::WorkerCore& ctx, HttpStreamHandover handover, Closed on_closed);
  ~HttpBodyStream();
  HttpBodyStream(const HttpBodyStream&) = delete;
  HttpBodyStream& operator=(const HttpBodyStream&) = delete;

  // Becomes the connection's handler: starts reading and writing (the head first). Call it in the
  // callback that took the stream.
  void start();
  // The connection: its queue takes the body's items framed as chunked() says (request_flush()
  // after pushing); its queue limits are the owner's to set.
  net::Connection& connection() { return *conn_; }
  const net::Connection& connection() const { return *conn_; }
  // Bytes that are never dropped (a file header): copied, one chunk when chunked().
  void push_control(std::span<const uint8_t> bytes);
  // Items queued: written after the worker's merge hold, at once when the client fell behind
  // (`urgent`: what net::Connection::request_flush calls video).
  void request_flush(bool urgent) { conn_->request_flush(urgent); }
  // Written in this loop iteration whatever the merge hold: a new player's first burst.
  void flush_now() { conn_->flush_now(); }
  // Told (until replaced) each time everything queued reached the kernel: a body read piece by
  // piece asks for the next one.
  void on_drained(std::function<void()> fn) { on_drained_ = std::move(fn); }
  // Graceful end: what is queued goes out, then the last chunk (HTTP/1.1), then the socket
  // closes; given up after `linger` (a client that stopped reading).
  void end(std::chrono::milliseconds linger);
  // Closes now, dropping what is queued; the Closed callback is not called.
  void close(std::string_view reason);

  bool open() const { return conn_->state() != net::Connection::State::Closed; }
  int fd() const { return conn_->fd(); }
  bool chunked() const { return chunked_; }
  // Body bytes the kernel took, chunk framing included (as nginx's $body_bytes_sent).
  uint64_t body_bytes() const { return conn_->bytes_out() > head_end_ ? conn_->bytes_out() - head_end_ : 0; }
  size_t queued_bytes() const { return conn_->queued_bytes(); }

 private:
  void on_data(std::span<const uint8_t> bytes) override;
  void on_close(const std::string& reason) override;
  void on_drained() override {
    if (on_drained_) on_drained_();
  }
  void closed(const std::string& reason);
  void release_slot();

  net::WorkerCore& ctx_;
  std::unique_ptr<net::Connection> conn_;
  std::function<void()> release_slot_;  // http.max_connections: counted until it runs
  const bool chunked_;
  uint64_t head_end_ = 0;  // the connection's bytes_out() once the response head is sent
  uint64_t ignored_in_ = 0;
  TimerId linger_timer_ = 0;
  Closed on_closed_;
  std::function<void()> on_drained_;
};

}  // namespace rill::http
