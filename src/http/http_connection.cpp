#include "rill/http/http_connection.h"

#include <utility>

#include "rill/http/http_server.h"

namespace rill::http {

namespace {

// Pipelined bytes buffered beyond the request being answered: past this, reading pauses (the
// kernel holds the rest) until the exchange is done.
constexpr size_t kMaxBufferedInput = 64 * 1024;

protocol::HttpParseLimits limits_of(const config::HttpConfig& hc) {
  protocol::HttpParseLimits l;
  l.max_head = hc.max_header_size;
  return l;
}

}  // namespace

HttpConnection::HttpConnection(HttpServer& server, std::unique_ptr<net::Connection> conn, std::string addr)
    : server_(server),
      conn_(std::move(conn)),
      addr_(std::move(addr)),
      peer_(conn_->peer()),
      parser_(limits_of(server.context().config->http)) {}

HttpConnection::~HttpConnection() {
  if (exchange_) exchange_->abandon();
}

void HttpConnection::start() {
  arm_deadline();
  conn_->start(*this);
}

void HttpConnection::arm_deadline() {
  const int64_t timeout = server_.context().config->http.timeout.count();
  deadline_ms_ = timeout > 0 ? server_.context().timers->now_ms() + timeout : 0;
}

void HttpConnection::check_deadline(int64_t now_ms) {
  if (state_ == State::Closed || deadline_ms_ == 0 || now_ms < deadline_ms_) return;
  const int64_t timeout = server_.context().config->http.timeout.count();
  if (state_ == State::Head && in_.empty() && parser_.idle()) {
    // An idle keep-alive connection (or one that never sent a byte): closed quietly.
    server_.context().log->debug("http: {} closed: idle for http.timeout ({} ms)", peer_, timeout);
  } else {
    const char* what = state_ == State::Exchange ? "response not taken by the client" : "no complete request";
    server_.context().log->info("http: {} closed: {} within http.timeout ({} ms)", peer_, what, timeout);
  }
  close("http.timeout");
}

void HttpConnection::close(std::string_view reason) {
  if (state_ == State::Closed) return;
  if (conn_) conn_->close(reason);
  finished(std::string(reason));
}

void HttpConnection::finished(const std::string&) {
  if (state_ == State::Closed) return;
  state_ = State::Closed;
  deadline_ms_ = 0;
  if (exchange_) {
    std::shared_ptr<HttpExchange> ex = std::move(exchange_);
    ex->abandon();  // a held exchange learns that its client left
  }
  server_.closed(this);  // destroys this object after the current callback
}

void HttpConnection::on_close(const std::string& reason) { finished(reason); }

void HttpConnection::on_data(std::span<const uint8_t> bytes) {
  if (state_ == State::Closed) return;
  in_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (state_ == State::Exchange) {
    // Pipelined, or a client talking while its answer is pending: kept, bounded.
    if (in_.size() > kMaxBufferedInput) conn_->pause_reading();
    return;
  }
  process();
}

void HttpConnection::on_drained() {
  if (state_ != State::Exchange || !exchange_ || !exchange_->answered()) return;
  // The response reached the kernel: the next request may start.
  exchange_.reset();
  state_ = State::Head;
  arm_deadline();
  if (!conn_->reading()) conn_->resume_reading();
  process();
}

void HttpConnection::process() {
  size_t pos = 0;
  const auto input = [&] {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(in_.data()) + pos, in_.size() - pos);
  };
  while (state_ == State::Head || state_ == State::Body || state_ == State::ChunkedBody) {
    if (pos == in_.size()) break;
    if (state_ == State::Head) {
      size_t used = 0;
      const auto r = parser_.feed(input(), used);
      pos += used;
      if (r == protocol::HttpRequestHeadParser::Result::NeedMore) break;
      if (r == protocol::HttpRequestHeadParser::Result::Error) {
        fail_request(parser_.error().status, parser_.error().why);
        return;
      }
      head_ = parser_.take();
      parser_.reset();
      // RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1
      // request message that lacks a Host header field".
      if (head_.version == protocol::HttpVersion::Http11 && !head_.has_host) {
        fail_request(400, "HTTP/1.1 request without a Host field");
        return;
      }
      body_.clear();
      const size_t max_body = server_.context().config->http.max_body_size;
      if (head_.chunked) {
        chunked_.emplace(max_body);
        state_ = State::ChunkedBody;
      } else if (head_.content_length && *head_.content_length > 0) {
        if (*head_.content_length > max_body) {
          fail_request(413, "request body of " + std::to_string(*head_.content_length) +
                                " bytes is over http.max_body_size (" + std::to_string(max_body) + ")");
          return;
        }
        body_left_ = *head_.content_length;
        state_ = State::Body;
      } else {
        in_.erase(0, pos);
        return dispatch();
      }
      // RFC 9110 §10.1.1: a client that sent "Expect: 100-continue" waits for the interim answer.
      if (head_.expect_continue && pos == in_.size()) {
        conn_->send(SharedBuffer::copy_of(std::string_view(head_.version == protocol::HttpVersion::Http10
                                                               ? "HTTP/1.0 100 Continue\r\n\r\n"
                                                               : "HTTP/1.1 100 Continue\r\n\r\n")));
      }
    } else if (state_ == State::Body) {
      const size_t take = std::min<uint64_t>(body_left_, in_.size() - pos);
      body_.append(in_, pos, take);
      pos += take;
      body_left_ -= take;
      if (body_left_ == 0) {
        in_.erase(0, pos);
        return dispatch();
      }
    } else {
      size_t used = 0;
      const auto r = chunked_->feed(input(), used, body_);
      pos += used;
      if (r == protocol::HttpChunkedDecoder::Result::NeedMore) break;
      if (r == protocol::HttpChunkedDecoder::Result::Error) {
        fail_request(chunked_->status(), "chunked request body: " + chunked_->why());
        return;
      }
      chunked_.reset();
      in_.erase(0, pos);
      return dispatch();
    }
  }
  in_.erase(0, pos);
}

void HttpConnection::dispatch() {
  net::WorkerCore& ctx = server_.context();
  const std::optional<HttpMethod> method = method_from_token(head_.method);
  if (!method) {
    // RFC 9110 §9.1: "An origin server that receives a request method that is unrecognized or not
    // implemented SHOULD respond with the 501 (Not Implemented) status code".
    fail_request(501, "method " + std::string(head_.method.substr(0, 32)) + " not implemented");
    return;
  }
  HttpRequestInfo info;
  info.method = *method;
  info.target = head_.target;  // a copy: a held request's info may outlive the head
  info.peer = peer_;
  info.started_ms = ctx.timers->now_ms();
  info.id = ctx.sessions->next_id();
  exchange_ = std::make_shared<HttpExchange>(*this, std::move(head_), std::move(info), std::move(body_));
  head_ = {};
  body_.clear();
  state_ = State::Exchange;
  deadline_ms_ = 0;                              // no deadline while the handler has it (held() keeps it so)
  std::shared_ptr<HttpExchange> ex = exchange_;  // the handler may end the connection meanwhile
  server_.handle(*ex);
  if (state_ == State::Closed || ex != exchange_) return;
  if (!ex->answered()) held(*ex);  // answered later (the handler kept a handle), or abandoned
}

void HttpConnection::held(HttpExchange&) {
  // No deadline while held: what it waits for has its own (LL-HLS holds, gate callbacks).
  deadline_ms_ = 0;
}

void HttpConnection::respond(HttpExchange&, BufferRef head, BufferRef body, bool close_after) {
  if (state_ == State::Closed) return;
  conn_->send(std::move(head));
  if (body) {
    // A segment fetched by many clients goes by sendfile from its memory file (http.sendfile).
    std::shared_ptr<const net::FileBody> file;
    if (server_.context().config->http.sendfile && !conn_->secure())
      file = server_.file_bodies().file_for(body);
    if (!file || !conn_->send_file(std::move(file))) conn_->send(std::move(body));
  }
  arm_deadline();  // the response must leave within http.timeout
  if (close_after) {
    conn_->close_after_flush("response with Connection: close");
    return;
  }
  // The next request starts once this response reached the kernel (on_drained): in this loop
  // iteration unless the socket is full.
}

std::unique_ptr<net::Connection> HttpConnection::hand_over(BufferRef head) {
  std::unique_ptr<net::Connection> conn = std::move(conn_);
  conn->send(std::move(head));
  state_ = State::Closed;
  deadline_ms_ = 0;
  exchange_.reset();
  server_.closed(this);
  return conn;
}

void HttpConnection::fail_request(int status, const std::string& why) {
  server_.context().log->info("http: {} bad request: {}", peer_, why);
  ResponseHeadParts p;
  p.http10 = false;
  p.status = status;
  p.common = &server_.common_headers();
  const std::string body = why + "\n";
  p.content_length = body.size();
  p.close = true;
  ResponseHeaders headers;
  headers.add("Content-Type", "text/plain; charset=utf-8");
  headers.add("Cache-Control", "no-cache");
  p.headers = &headers;
  conn_->send(render_response_head(p));
  conn_->send(SharedBuffer::copy_of(body));
  state_ = State::Exchange;  // nothing more is parsed
  arm_deadline();
  conn_->close_after_flush("bad request");
}

}  // namespace rill::http
