#pragma once
// HttpBodyStream: the streamed body of one HTTP response on a connection handed over by
// HttpExchange::take_stream() (the response head already queued), written like an RTMP player's:
// the net::Connection (plain or TLS) sends the shared, already-serialized buffers with one
// sendmsg per flush (TLS: one record per 16 KiB), never copied on a plain connection.
//
// Two queues: pending() takes the session's frames and applies the slow-consumer policy (drops,
// overflow); flush() moves all of it at once into the connection's queue as one batch. With
// chunked framing (HTTP/1.1) the batch becomes one chunk: a small size line before it and a CRLF
// after it, not per tag. Once framed, a batch is never dropped (the connection's queue drops
// nothing that is not a frame), and the next one waits in pending() until this one reached the
// kernel: the connection reports that (on_drained) and the next batch goes at once. HTTP/1.0
// gets a close-delimited body: the same batches, without the framing.
//
// What the client sends after its request is read and discarded (bounded): reading is how a
// client that went away is noticed at once.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "rill/media/output_queue.h"
#include "rill/net/connection.h"
#include "rill/net/server_context.h"
#include "rill/server/http_exchange.h"

namespace rill::server {

class HttpBodyStream final : private net::ConnectionHandler {
 public:
  // Told once when the connection ended by itself: the client left, an I/O error, end() done
  // (or timed out). Never for close().
  using Closed = std::function<void(const std::string& reason)>;
  static constexpr uint64_t kMaxIgnoredInput = 64 * 1024;  // bytes a client may send after its request

  // The handover's connection (its head queued) becomes this object's; its slot is released once,
  // when the body ends or at the latest on destruction.
  HttpBodyStream(net::ServerContext& ctx, HttpStreamHandover handover, media::QueueLimits limits,
                 Closed on_closed);
  ~HttpBodyStream();
  HttpBodyStream(const HttpBodyStream&) = delete;
  HttpBodyStream& operator=(const HttpBodyStream&) = delete;

  // Becomes the connection's handler: starts reading and writing (the head first). Call it in the
  // callback that took the stream.
  void start();
  // The session's frames wait here (its drop policy applies); flush() after pushing.
  media::OutputQueue& pending() { return pending_; }
  const media::OutputQueue& pending() const { return pending_; }
  // Sends what is pending as one batch unless the previous one is still on its way.
  void flush();
  // Graceful end: what is pending goes out, then the chunked terminator (HTTP/1.1), then the
  // socket closes; given up after `linger` (a client that stopped reading).
  void end(std::chrono::milliseconds linger);
  // Closes now, dropping what is queued; the Closed callback is not called.
  void close(std::string_view reason);

  bool open() const { return conn_->state() != net::Connection::State::Closed; }
  int fd() const { return conn_->fd(); }
  bool chunked() const { return chunked_; }
  uint64_t body_bytes() const { return body_bytes_; }  // handed to the connection, framing excluded
  size_t queued_bytes() const { return pending_.bytes() + conn_->queued_bytes(); }

 private:
  void on_data(std::span<const uint8_t> bytes) override;
  void on_close(const std::string& reason) override;
  void on_drained() override { flush(); }
  void move_pending();  // pending() -> one (framed) batch in the connection's queue
  void closed(const std::string& reason);
  void release_slot();

  net::ServerContext& ctx_;
  std::unique_ptr<net::Connection> conn_;
  std::function<void()> release_slot_;  // http.max_connections: counted until it runs
  media::OutputQueue pending_;
  BufferRef crlf_;       // every chunk's trailing CRLF, shared by the chunks of this response
  BufferRef size_line_;  // the chunk-size line, rewritten in place once the previous one was sent
  const bool chunked_;
  uint64_t body_bytes_ = 0;
  uint64_t ignored_in_ = 0;
  TimerId linger_timer_ = 0;
  Closed on_closed_;
};

}  // namespace rill::server
