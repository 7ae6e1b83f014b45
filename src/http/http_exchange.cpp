#include "rill/http/http_exchange.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "rill/http/http_connection.h"
#include "rill/http/http_server.h"

namespace rill::http {

namespace {

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a == b) return true;  // the usual spelling: one compare, no loop
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// The connection writes these itself, from the response's framing. Names are told apart by their
// length first: most are none of them.
bool is_framing_header(std::string_view name) {
  switch (name.size()) {
    case 10:
      return same_name(name, "Connection");
    case 14:
      return same_name(name, "Content-Length");
    case 17:
      return same_name(name, "Transfer-Encoding");
    default:
      return false;
  }
}

}  // namespace

const char* http_reason_phrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Content Too Large";  // RFC 9110 §15.5.14
    case 414:
      return "URI Too Long";  // RFC 9110 §15.5.15
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Range Not Satisfiable";
    case 417:
      return "Expectation Failed";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return status < 300 ? "OK" : status < 400 ? "Redirect" : status < 500 ? "Client Error" : "Server Error";
  }
}

char* ResponseHeaders::room_for(size_t n) {
  if (!spilled_ && size_ + n <= kInline) {
    char* out = inline_ + size_;
    size_ += n;
    return out;
  }
  if (!spilled_) {
    more_.reserve(2 * kInline + n);
    more_.assign(inline_, size_);
    spilled_ = true;
  }
  const size_t at = more_.size();
  more_.resize(at + n);
  return more_.data() + at;
}

void ResponseHeaders::add(std::string_view name, std::string_view value) {
  if (is_framing_header(name)) return;
  if (name.size() == 12 && same_name(name, "Content-Type")) has_content_type_ = true;
  char* out = room_for(name.size() + value.size() + 4);
  std::memcpy(out, name.data(), name.size());
  out += name.size();
  std::memcpy(out, ": ", 2);
  // std::copy: an empty view may have a null data() (memcpy from null is UB even for 0 bytes).
  out = std::copy(value.begin(), value.end(), out + 2);
  std::memcpy(out, "\r\n", 2);
}

void ResponseHeaders::add_lines(std::string_view lines) {
  std::copy(lines.begin(), lines.end(), room_for(lines.size()));
}

BufferRef render_response_head(const ResponseHeadParts& p) {
  using namespace std::string_view_literals;
  char status[16];
  const auto status_end = std::to_chars(status, status + sizeof status, p.status).ptr;
  char length[24];
  const char* length_end = length;
  if (p.content_length) length_end = std::to_chars(length, length + sizeof length, *p.content_length).ptr;
  const std::string_view reason = http_reason_phrase(p.status);
  const std::string_view empty;
  const std::string_view lines[] = {
      p.http10 ? "HTTP/1.0 "sv : "HTTP/1.1 "sv,
      std::string_view(status, static_cast<size_t>(status_end - status)),
      " "sv,
      reason,
      "\r\n"sv,
      p.common ? std::string_view(*p.common) : empty,  // Server, X-Rill-Worker, Date
      p.headers ? std::string_view(p.headers->lines()) : empty,
      (!(p.headers && p.headers->has_content_type()) && p.content_length && *p.content_length > 0)
          ? "Content-Type: text/plain; charset=utf-8\r\n"sv
          : empty,
      p.content_length ? "Content-Length: "sv : empty,
      std::string_view(length, static_cast<size_t>(length_end - length)),
      p.content_length ? "\r\n"sv : empty,
      p.chunked ? "Transfer-Encoding: chunked\r\n"sv : empty,
      // RFC 9112 §9.3: an HTTP/1.0 client that asked for keep-alive is told it is kept.
      p.close    ? "Connection: close\r\n"sv
      : p.http10 ? "Connection: keep-alive\r\n"sv
                 : empty,
      "\r\n"sv,
  };
  size_t n = 0;
  for (std::string_view l : lines) n += l.size();
  BufferRef head = SharedBuffer::create(n);
  uint8_t* out = head->tail();  // written in place: one copy per piece, none for an empty one
  for (std::string_view l : lines) {
    if (l.empty()) continue;
    std::memcpy(out, l.data(), l.size());
    out += l.size();
  }
  head->commit(n);
  return head;
}

HttpExchange* HttpHeld::get() const {
  std::shared_ptr<HttpExchange> ex = ex_.lock();
  return ex && ex->conn_ && !ex->answered_ ? ex.get() : nullptr;
}

HttpExchange::HttpExchange(HttpConnection& conn, protocol::HttpRequestHead&& head, HttpRequestInfo&& info,
                           std::string&& body)
    : server_(conn.server()),
      conn_(&conn),
      head_(std::move(head)),
      info_(std::move(info)),
      body_(std::move(body)) {}

HttpExchange::~HttpExchange() { give_up_state(); }

void HttpExchange::give_up_state() {
  if (state_) server_.dispose(std::move(state_));
}

bool HttpExchange::secure() const { return conn_ && conn_->secure(); }

ResponseHeadParts HttpExchange::answer(int status) {
  answered_ = true;
  give_up_state();
  ResponseHeadParts p;
  p.http10 = http10();
  p.status = status;
  p.common = &conn_->server().common_headers();
  p.headers = &out_headers_;
  p.close = close_after_ || !head_.keep_alive || conn_->server().shutting_down();
  return p;
}

size_t HttpExchange::reply(int status, const BufferRef& body) {
  if (answered_ || !conn_) return 0;
  ResponseHeadParts p = answer(status);
  // "A server MUST NOT send a Content-Length header field in any response with a status code of
  // 1xx (Informational) or 204 (No Content)" (RFC 9110 §8.6); nor does a 304 need one.
  const bool length = status >= 200 && status != 204 && status != 304;
  if (length) p.content_length = body.size();
  // "The HEAD method is identical to GET except that the server MUST NOT send content in the
  // response" (RFC 9110 §9.3.2): the head says the length the GET would have had.
  const bool with_body = length && info_.method != HttpMethod::Head && body.size() > 0;
  const size_t bytes = with_body ? body.size() : 0;
  // Logged before the response is queued: respond() may end a held exchange (this object).
  server_.log_access(*this, status, bytes);
  conn_->respond(*this, render_response_head(p), with_body ? body : BufferRef(), p.close);
  return bytes;
}

size_t HttpExchange::reply(int status, std::string_view body) {
  return reply(status, body.empty() ? BufferRef() : SharedBuffer::copy_of(body));
}

void HttpExchange::add_cors_headers() { add_header_lines(server_.cors_lines()); }

void HttpExchange::reply_error(int status, std::string_view why) {
  add_cors_headers();
  add_header("Content-Type", "text/plain; charset=utf-8");
  add_header("Cache-Control", "no-cache");
  std::string body(why);
  body += '\n';
  reply(status, body);
}

HttpStreamHandover HttpExchange::take_stream(int status, std::optional<uint64_t> content_length) {
  HttpStreamHandover h;
  if (answered_ || !conn_) return h;
  ResponseHeadParts p = answer(status);
  p.content_length = content_length;
  if (info_.method == HttpMethod::Head) {
    // The head alone, with the length when it is known (a live body has none).
    server_.log_access(*this, status, 0);
    conn_->respond(*this, render_response_head(p), BufferRef(), p.close);
    return h;
  }
  // HTTP/1.0 without a length: the body ends when the connection does (RFC 9112 §6.3).
  p.chunked = !content_length && !http10();
  p.close = true;
  h.chunked = p.chunked;
  BufferRef head = render_response_head(p);
  HttpConnection* c = std::exchange(conn_, nullptr);
  h.release_slot = c->server().count_stream(c->addr());
  // The connection lets go of this exchange: a held one may be destroyed here, so nothing of
  // it is touched afterwards.
  h.conn = c->hand_over(std::move(head));
  return h;
}

HttpHeld HttpExchange::hold(std::unique_ptr<HttpHeldState> state) {
  give_up_state();  // the one held before (an admission's, whose continuation holds again)
  if (conn_ && !answered_) {
    conn_->held(*this);
    state_ = std::move(state);
  } else if (state) {
    server_.dispose(std::move(state));  // nothing to wait for: answered or abandoned already
  }
  return HttpHeld(weak_from_this());
}

void HttpExchange::abandon() {
  conn_ = nullptr;
  if (answered_ || !state_) return;
  std::unique_ptr<HttpHeldState> s = std::move(state_);
  s->abandoned(*this);
  server_.dispose(std::move(s));
}

}  // namespace rill::http
