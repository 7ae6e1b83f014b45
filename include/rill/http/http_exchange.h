#pragma once
// HttpExchange: one HTTP request and its response on an HttpConnection (http_connection.h) — all
// that a route handler sees of HTTP. The connection parsed the request head
// (protocol/http_request_head.h), read its body, routed it (http_router.h); the handler answers
// now, or holds the exchange and answers later (an admission callback, an LL-HLS blocking reload,
// a segment fetched from the owner worker), or turns the connection into a streamed body
// (HTTP-FLV).
//
// Responses are written the way RTMP is: the status line and headers are rendered into one small
// shared buffer and queued with the body's shared buffer behind it (no copy of the body), so a
// playlist or a segment leaves with one sendmsg — or one io_uring send in the worker's flush
// batch — in the loop iteration that answered it.
//
// Life: the connection owns the exchange until it is answered and the next request may start
// (HTTP/1.1 answers pipelined requests in order, RFC 9112 §9.3.2: the next head is not parsed
// before this one is answered). A held exchange is reached through HttpHeld and owns what it waits
// with (its HttpHeldState): when the client leaves first, the state's abandoned() runs once (cancel
// what was waited for) and the handle reads null from then on.
//
// The exchange answers for itself: reply() and reply_error() write the access-log line, and
// add_cors_headers() adds the server's CORS lines, so a handler needs nothing but the exchange.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rill/core/buffer.h"
#include "rill/http/http_router.h"
#include "rill/protocol/http_request_head.h"

namespace rill::net {
class Connection;
}

namespace rill::http {

class HttpConnection;
class HttpExchange;
class HttpServer;

// The reason phrase of a status (RFC 9110 §15), "OK" for 200.
const char* http_reason_phrase(int status);

// A response's own header lines ("Name: value\r\n" each), rendered as they are added: the head
// is then a few appends, not one string pair per header (an HLS player's playlist poll is a
// request every few seconds per viewer, and its head is most of the work of answering it).
class ResponseHeaders {
 public:
  // Framing headers (Content-Length, Connection, Transfer-Encoding) are the connection's to
  // write: they are left out here.
  void add(std::string_view name, std::string_view value);
  // Lines rendered before by another ResponseHeaders' add() (a set every response of a kind
  // carries, rendered once), appended as they are; not a Content-Type (has_content_type() does
  // not look at them).
  void add_lines(std::string_view lines);
  std::string_view lines() const {
    return spilled_ ? std::string_view(more_) : std::string_view(inline_, size_);
  }
  bool has_content_type() const { return has_content_type_; }

 private:
  // The lines live in the object while they fit (a playlist's or a segment's few headers do):
  // no allocation per response; past that, in `more_`.
  static constexpr size_t kInline = 240;
  char* room_for(size_t n);  // where the next n bytes go, counted in

  char inline_[kInline];
  size_t size_ = 0;
  std::string more_;
  bool spilled_ = false;
  bool has_content_type_ = false;
};

// What a response head is made of; render_response_head() writes it out, into one buffer of its
// exact size: the status line, the server's common headers, the handler's, a default
// Content-Type for a body without one, then Content-Length / Transfer-Encoding / Connection from
// the fields here.
struct ResponseHeadParts {
  bool http10 = false;  // the response line echoes the request's version
  int status = 200;
  const std::string* common = nullptr;  // "Name: value\r\n" lines
  const ResponseHeaders* headers = nullptr;
  std::optional<uint64_t> content_length;
  bool chunked = false;
  bool close = false;  // "Connection: close"; else HTTP/1.0 gets "Connection: keep-alive"
};
BufferRef render_response_head(const ResponseHeadParts& parts);

// A weak handle on a held exchange: get() is null once the exchange was answered or its client left.
class HttpHeld {
 public:
  HttpHeld() = default;
  HttpExchange* get() const;
  explicit operator bool() const { return get() != nullptr; }

 private:
  friend class HttpExchange;
  explicit HttpHeld(std::weak_ptr<HttpExchange> ex) : ex_(std::move(ex)) {}
  std::weak_ptr<HttpExchange> ex_;
};

// The connection of a streamed response, handed over by HttpExchange::take_stream(): the socket
// (plain or TLS) with the response head already queued, and the slot that counts it in
// http.max_connections until released.
struct HttpStreamHandover {
  std::unique_ptr<net::Connection> conn;
  bool chunked = false;                // HTTP/1.1: chunked framing; HTTP/1.0: close-delimited
  std::function<void()> release_slot;  // runs once (or on destruction of the session's holder)
  explicit operator bool() const { return conn != nullptr; }
};

// What a held exchange waits with (an admission decision, a fetch from another worker, a blocking
// reload), owned by the exchange from hold() on. Its callback reaches the exchange through an
// HttpHeld. The exchange gives the state up when it is answered, held again with another state,
// or abandoned (after abandoned()), and the HttpServer destroys it on the next loop turn, never at
// once: the answer usually comes from inside the state's own callback, and reply() may end the
// exchange (and so what owns the state) before that callback returns.
class HttpHeldState {
 public:
  virtual ~HttpHeldState() = default;
  // The client left before the answer: cancel what the state waits for, so that its callback does
  // not run. `ex` is the exchange being abandoned (its request, for a log line).
  virtual void abandoned(const HttpExchange& ex) = 0;
};

class HttpExchange : public std::enable_shared_from_this<HttpExchange> {
 public:
  // The request's parts are moved in once (not through by-value parameters: a move each saved).
  HttpExchange(HttpConnection& conn, protocol::HttpRequestHead&& head, HttpRequestInfo&& info,
               std::string&& body);
  ~HttpExchange();
  HttpExchange(const HttpExchange&) = delete;
  HttpExchange& operator=(const HttpExchange&) = delete;

  // The server the request came to (outlives the exchange): what must log after the exchange is
  // gone (a streamed body's end) goes through it.
  HttpServer& server() const { return server_; }

  // ---- the request ------------------------------------------------------------------------
  const HttpRequestInfo& info() const { return info_; }
  HttpMethod method() const { return info_.method; }
  // A request header by name, case-insensitive; null when absent. The value views the request's
  // head, which lives as long as the exchange: copy what must outlive it.
  const std::string_view* header(std::string_view name) const { return head_.find(name); }
  const std::string& body() const { return body_; }  // Content-Length or chunked, at most http.max_body_size
  bool secure() const;                               // HTTPS
  bool http10() const { return head_.version == protocol::HttpVersion::Http10; }
  // The protocol its access log line names: "http" unless the handler says ("hls").
  void set_log_protocol(const char* protocol) { log_protocol_ = protocol; }

  // ---- the response -----------------------------------------------------------------------
  // Adds a response header (no check for duplicates: the caller adds each once). Server, Date,
  // Content-Length, Connection and Transfer-Encoding are the connection's to write.
  void add_header(std::string_view name, std::string_view value) { out_headers_.add(name, value); }
  // Header lines rendered before (ResponseHeaders::lines() of a set added once, e.g. CORS).
  void add_header_lines(std::string_view lines) { out_headers_.add_lines(lines); }
  // The CORS headers of http.cors_origin (none when it is empty): every stream response carries
  // them, errors included.
  void add_cors_headers();

  // A complete response with Content-Length (none for 1xx, 204, 304: RFC 9110 §8.6). For HEAD
  // the head alone, with the length the GET would have had (RFC 9110 §9.3.2). Writes the access
  // log line and returns the body bytes written (0 for HEAD). Answers once: later calls are
  // ignored. The exchange may be gone when it returns (a held one: the connection goes on with
  // the next request), so nothing of it is touched afterwards.
  size_t reply(int status, const BufferRef& body);
  size_t reply(int status, std::string_view body);
  // A plain-text error: one line, CORS, no-cache, answered and logged.
  void reply_error(int status, std::string_view why);
  // After the response: close the connection instead of reading the next request.
  void close_after_reply() { close_after_ = true; }

  // A live body (HTTP-FLV): writes the head — chunked for HTTP/1.1, close-delimited for HTTP/1.0,
  // "Connection: close" either way — and hands the connection over; the HttpConnection is done
  // with it, and the access log line is the new owner's to write when the body ends
  // (core/access_line.h). For HEAD: the head alone is answered (and logged) and the result is
  // empty. With a `content_length` (a body whose size is known: a recording cut), the head says
  // it and the body is sent as it is, unframed (RFC 9112 §6.3: the length delimits it); HEAD then
  // gets that length (RFC 9110 §9.3.2) and the connection goes on.
  HttpStreamHandover take_stream(int status, std::optional<uint64_t> content_length = std::nullopt);

  // ---- answering later ----------------------------------------------------------------------
  // Keeps the exchange open after the handler returns. The connection reads nothing more from the
  // client meanwhile (a pipelined request waits), but notices its departure. The exchange owns
  // `state` from here on (HttpHeldState); a state it held before is given up (a continuation
  // that holds again, with a wait of its own). Hold before starting what calls back.
  HttpHeld hold(std::unique_ptr<HttpHeldState> state = nullptr);
  bool answered() const { return answered_; }

 private:
  friend class HttpConnection;
  friend class HttpServer;
  friend class HttpHeld;
  void abandon();                        // the connection closed first
  ResponseHeadParts answer(int status);  // marks it answered; the head's common parts
  void give_up_state();                  // to the server, destroyed on the next loop turn

  HttpServer& server_;
  HttpConnection* conn_;  // null once abandoned
  protocol::HttpRequestHead head_;
  HttpRequestInfo info_;
  std::string body_;
  ResponseHeaders out_headers_;
  std::unique_ptr<HttpHeldState> state_;  // while held
  const char* log_protocol_ = "http";
  bool answered_ = false;
  bool close_after_ = false;
};

}  // namespace rill::http
