#pragma once
// HttpConnection: one HTTP/1.1 client connection of the worker, on a net::Connection (plain or
// TLS) like an RTMP session's. It reads requests (protocol/http_request_head.h: the head, then a
// Content-Length or chunked body up to http.max_body_size), hands each to the HttpServer as an
// HttpExchange, writes the responses in order, and keeps the connection alive between requests
// (RFC 9112 §9.3) until the client or a "Connection: close" ends it.
//
// One exchange at a time: pipelined requests wait (unparsed, bounded) until the one before is
// answered, which keeps responses in request order (RFC 9112 §9.3.2) and memory per connection
// small. While an exchange is held (its answer comes later), the connection still reads, so a
// client that leaves is noticed and the exchange abandoned at once.
//
// Time limits come from the server's sweep (HttpServer::sweep, once a second): a request head (and
// its body) must be complete within http.timeout of its first byte — or of the connection's start,
// or the previous response — and a response must leave within http.timeout.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "rill/http/http_exchange.h"
#include "rill/net/connection.h"
#include "rill/protocol/http_request_head.h"

namespace rill::http {

class HttpServer;

class HttpConnection final : private net::ConnectionHandler {
 public:
  HttpConnection(HttpServer& server, std::unique_ptr<net::Connection> conn, std::string addr);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  void start();
  const std::string& peer() const { return peer_; }
  const std::string& addr() const { return addr_; }  // the address counted in max_connections_per_ip
  bool secure() const { return conn_ && conn_->secure(); }
  HttpServer& server() { return server_; }
  // Closes now (shutdown, the sweep); the server is told (closed()) after the current callback.
  void close(std::string_view reason);
  // The sweep: closes the connection when its current deadline has passed.
  void check_deadline(int64_t now_ms);

  // ---- for HttpExchange ---------------------------------------------------------------------
  // Queues a complete response (head, then body unless empty) and goes on with the next request.
  void respond(HttpExchange& ex, BufferRef head, BufferRef body, bool close_after);
  // take_stream(): queues the head, hands the connection over; this object is done afterwards.
  std::unique_ptr<net::Connection> hand_over(BufferRef head);
  void held(HttpExchange& ex);  // the handler returned without answering

 private:
  enum class State : uint8_t { Head, Body, ChunkedBody, Exchange, Closed };

  void on_data(std::span<const uint8_t> bytes) override;
  void on_close(const std::string& reason) override;
  void on_drained() override;

  void process();  // parses and dispatches what is buffered, as far as the state allows
  void dispatch();
  void fail_request(int status, const std::string& why);  // an unparseable request: answer, close
  void finished(const std::string& reason);               // the connection is over
  void arm_deadline();

  HttpServer& server_;
  std::unique_ptr<net::Connection> conn_;
  std::string addr_;
  std::string peer_;
  protocol::HttpRequestHeadParser parser_;
  std::optional<protocol::HttpChunkedDecoder> chunked_;
  protocol::HttpRequestHead head_;  // the request whose body is being read
  std::string body_;
  uint64_t body_left_ = 0;                  // State::Body
  std::string in_;                          // bytes received and not yet parsed
  std::shared_ptr<HttpExchange> exchange_;  // the request being answered
  State state_ = State::Head;
  int64_t deadline_ms_ = 0;  // 0: none
};

}  // namespace rill::http
