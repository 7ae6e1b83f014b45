#include "rill/server/http_server.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <unistd.h>

#include <string>
#include <utility>

namespace rill::server {

namespace {

HttpMethod method_of(evhttp_cmd_type t) {
  switch (t) {
    case EVHTTP_REQ_GET: return HttpMethod::Get;
    case EVHTTP_REQ_HEAD: return HttpMethod::Head;
    case EVHTTP_REQ_OPTIONS: return HttpMethod::Options;
    case EVHTTP_REQ_POST: return HttpMethod::Post;
    case EVHTTP_REQ_PUT: return HttpMethod::Put;
    case EVHTTP_REQ_DELETE: return HttpMethod::Delete;
    case EVHTTP_REQ_PATCH: return HttpMethod::Patch;
    case EVHTTP_REQ_TRACE: return HttpMethod::Trace;
    case EVHTTP_REQ_CONNECT: return HttpMethod::Connect;
  }
  return HttpMethod::Get;  // evhttp passes on only the methods allowed below
}

std::string peer_name(evhttp_connection* conn) {
  if (!conn) return "?";
  char* addr = nullptr;
  uint16_t port = 0;
  evhttp_connection_get_peer(conn, &addr, &port);
  std::string a = addr ? addr : "?";
  if (a.find(':') != std::string::npos) a = "[" + a + "]";
  return a + ":" + std::to_string(port);
}

// The reason phrase: libevent's, except where RFC 9110 renamed the status since RFC 2616.
const char* reason_phrase(int status) { return status == 414 ? "URI Too Long" : nullptr; }  // RFC 9110 §15.5.15

// evbuffer_add_reference cleanup: drops the reference taken for libevent.
void release_buffer(const void*, size_t, void* extra) { static_cast<SharedBuffer*>(extra)->unref(); }

void add_by_reference(evbuffer* b, const BufferRef& body) {
  SharedBuffer* sb = body.get();
  sb->ref();  // released by libevent through release_buffer once the bytes are written
  if (evbuffer_add_reference(b, sb->data(), sb->size(), &release_buffer, sb) != 0)
    sb->unref();  // libevent 2.1 does not call the cleanup when it fails (out of memory)
}

// A TLS bufferevent encrypts bytes it reads from its buffer: it cannot take a file segment.
bool tls_of(evhttp_request* req) {
  evhttp_connection* conn = evhttp_request_get_connection(req);
  return conn && bufferevent_openssl_get_ssl(evhttp_connection_get_bufferevent(conn)) != nullptr;
}

}  // namespace

HttpServer::HttpServer(net::ServerContext& ctx)
    : ctx_(ctx), http_(evhttp_new(ctx.base)), file_bodies_(std::make_unique<HttpFileBodies>()) {
  configure(http_);
  header_deadline_ = std::make_unique<HttpHeaderDeadline>(ctx_, ctx_.config->http.timeout.count());
  evhttp_set_bevcb(http_, &HttpServer::on_new_connection, this);
  admit_ev_ = event_new(ctx.base, -1, 0, &HttpServer::on_admit, this);

  routes_.add(HttpMethod::Get, "/healthz", PathMatch::Exact, [this](evhttp_request* req, const HttpRequestInfo& info) {
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-cache");
    const std::string line = "ok worker=" + std::to_string(ctx_.worker_id) + " sessions=" +
                             std::to_string(ctx_.sessions->size()) + " streams=" + std::to_string(ctx_.streams->size()) +
                             " http_connections=" + std::to_string(connections()) + "\n";
    log_access(info, 200, reply(req, 200, line));
  });
  routes_.add(HttpMethod::Get, "/", PathMatch::Prefix,
              [this](evhttp_request* req, const HttpRequestInfo& info) { serve_stream(req, info); });
}

// The settings of every evhttp of this server (plain and TLS).
void HttpServer::configure(evhttp* h) {
  const auto& hc = ctx_.config->http;
  evhttp_set_max_headers_size(h, static_cast<ev_ssize_t>(hc.max_header_size));
  evhttp_set_max_body_size(h, static_cast<ev_ssize_t>(hc.max_body_size));
  timeval tv{static_cast<time_t>(hc.timeout.count() / 1000), static_cast<suseconds_t>((hc.timeout.count() % 1000) * 1000)};
  evhttp_set_timeout_tv(h, &tv);
  // Every method evhttp knows reaches us, so that POST & co get 405 from the route table. A
  // method token evhttp does not know gets 501 from evhttp, as RFC 9110 §9.1 asks ("An origin
  // server that receives a request method that is unrecognized or not implemented SHOULD
  // respond with the 501 (Not Implemented) status code").
  evhttp_set_allowed_methods(h, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_POST |
                                    EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH | EVHTTP_REQ_TRACE |
                                    EVHTTP_REQ_CONNECT);
  evhttp_set_default_content_type(h, "text/plain; charset=utf-8");
  evhttp_set_gencb(h, &HttpServer::on_request, this);
}

HttpServer::~HttpServer() {
  free_taken();
  if (free_taken_ev_) event_free(free_taken_ev_);
  evhttp_free(http_);  // frees every connection: on_connection_closed runs for each counted one
  if (https_) evhttp_free(https_);
  for (bufferevent* bev : pending_) bufferevent_decref(bev);
  event_free(admit_ev_);
}

void HttpServer::listen(int fd) { accept_on(http_, fd, bound_); }

void HttpServer::accept_on(evhttp* h, int fd, std::vector<evhttp_bound_socket*>& bound_list) {
  evutil_make_socket_nonblocking(fd);
  // evhttp closes the fd when freed; the master keeps its own copy for respawns.
  int own = dup(fd);
  evhttp_bound_socket* bound = own >= 0 ? evhttp_accept_socket_with_handle(h, own) : nullptr;
  if (!bound) {
    ctx_.log->error("http: cannot accept on listener fd {}", fd);
    if (own >= 0) ::close(own);
    return;
  }
  bound_list.push_back(bound);
}

void HttpServer::reply_shutting_down(evhttp_request* req, void*) {
  evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
  evhttp_send_error(req, 503, "Shutting down");
}

void HttpServer::close_listeners() {
  for (auto* b : bound_) evhttp_del_accept_socket(http_, b);
  bound_.clear();
  // HTTPS too: a new connection must meet the new generation (and its re-read certificate).
  for (auto* b : bound_tls_) evhttp_del_accept_socket(https_, b);
  bound_tls_.clear();
}

void HttpServer::stop_accepting() {
  // Removing the bound sockets stops new connections (the master keeps the listening sockets);
  // requests on connections already open are answered 503.
  for (auto* b : bound_) evhttp_del_accept_socket(http_, b);
  bound_.clear();
  evhttp_set_gencb(http_, &HttpServer::reply_shutting_down, nullptr);
  stop_accepting_tls();
}

void HttpServer::set_stream_handler(StreamRoute kind, StreamHandler h) { stream_handlers_.emplace_back(kind, std::move(h)); }

std::string HttpServer::peer_of(evhttp_request* req) { return peer_name(evhttp_request_get_connection(req)); }

// ---- connections ------------------------------------------------------------------------------
// libevent 2.1 has no connection limit (evhttp_set_max_connections came in 2.2) and tells of a new
// connection only through the bufferevent callback, which runs before evhttp makes its connection
// object. So the bufferevent made here is held (one reference) until on_admit, later in the same
// loop iteration (or the connection's first request, whichever comes first): by then evhttp has
// set the connection as its bufferevent's callback argument, or freed it (argument null). Counted
// connections carry our close callback; it runs once when evhttp closes or frees the connection.

bufferevent* HttpServer::on_new_connection(event_base* base, void* arg) {
  auto* self = static_cast<HttpServer*>(arg);
  bufferevent* bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);  // what evhttp makes itself
  if (!bev) return nullptr;
  bufferevent_incref(bev);
  self->pending_.push_back(bev);
  event_active(self->admit_ev_, EV_TIMEOUT, 0);
  return bev;
}

void HttpServer::on_admit(int, short, void* arg) { static_cast<HttpServer*>(arg)->admit_pending(); }

void HttpServer::admit_pending() {
  for (bufferevent* bev : std::exchange(pending_, {})) {
    bufferevent_data_cb rd = nullptr, wr = nullptr;
    bufferevent_event_cb ev = nullptr;
    void* conn = nullptr;
    bufferevent_getcb(bev, &rd, &wr, &ev, &conn);
    if (conn) admit(static_cast<evhttp_connection*>(conn));
    bufferevent_decref(bev);
  }
}

void HttpServer::admit(evhttp_connection* conn) {
  const size_t limit = ctx_.config->http.max_connections;
  if (connections() >= limit) {
    ctx_.log->warn("http: {} refused: worker connection limit {} reached", peer_name(conn), limit);
    evhttp_connection_free(conn);  // no request of it has reached a handler: close at once
    return;
  }
  std::string addr = core::address_part(peer_name(conn));
  if (!per_address_.acquire(addr, ctx_.config->http.max_connections_per_ip)) {
    ctx_.log->warn("http: {} refused: max_connections_per_ip {} reached", peer_name(conn),
                   ctx_.config->http.max_connections_per_ip);
    evhttp_connection_free(conn);
    return;
  }
  conns_.emplace(conn, Conn{nullptr, nullptr, std::move(addr)});
  evhttp_connection_set_closecb(conn, &HttpServer::on_connection_closed, this);
  header_deadline_->watch(conn);
}

void HttpServer::on_connection_closed(evhttp_connection* conn, void* arg) {
  auto* self = static_cast<HttpServer*>(arg);
  auto it = self->conns_.find(conn);
  if (it == self->conns_.end()) return;
  self->header_deadline_->forget(conn);
  const Conn c = it->second;
  self->conns_.erase(it);
  self->per_address_.release(c.addr);
  if (c.cb) c.cb(conn, c.arg);
}

void HttpServer::set_close_callback(evhttp_connection* conn, void (*cb)(evhttp_connection*, void*), void* arg) {
  if (!conn) return;
  auto it = conns_.find(conn);
  if (it == conns_.end()) {
    std::string addr = core::address_part(peer_name(conn));
    per_address_.acquire(addr, 0);  // not admitted yet: count it now (already serving it)
    it = conns_.emplace(conn, Conn{nullptr, nullptr, std::move(addr)}).first;
    evhttp_connection_set_closecb(conn, &HttpServer::on_connection_closed, this);
  }
  it->second.cb = cb;
  it->second.arg = arg;
}

// ---- replies ------------------------------------------------------------------------------------

void HttpServer::add_cors_headers(evhttp_request* req) const {
  const std::string& origin = ctx_.config->http.cors_origin;
  if (origin.empty()) return;
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Access-Control-Allow-Origin", origin.c_str());
  evhttp_add_header(h, "Access-Control-Expose-Headers", "Content-Length, Content-Type, Server");
  if (origin != "*") evhttp_add_header(h, "Vary", "Origin");
}

size_t HttpServer::reply(evhttp_request* req, int status, const BufferRef& body) {
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  // "A server MUST NOT send a Content-Length header field in any response with a status code of
  // 1xx (Informational) or 204 (No Content)" (RFC 9110 §8.6); nor does a 304 need one.
  if (status >= 200 && status != 204 && status != 304)
    evhttp_add_header(h, "Content-Length", std::to_string(body.size()).c_str());
  // libevent 2.1 sends whatever body it is given, HEAD or not, and adds no Content-Length for
  // HEAD itself: a HEAD reply gets the headers, with the length the GET would have had, and no
  // body ("The HEAD method is identical to GET except that the server MUST NOT send content in
  // the response", RFC 9110 §9.3.2).
  if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD || body.size() == 0) {
    evhttp_send_reply(req, status, reason_phrase(status), nullptr);
    return 0;
  }
  evbuffer* b = evbuffer_new();
  // A large body on a plain connection goes out with sendfile (http_file_bodies.h).
  if (tls_of(req) || !file_bodies_->add(b, body)) add_by_reference(b, body);
  if (evbuffer_get_length(b) != body.size()) {
    evbuffer_free(b);
    evhttp_remove_header(h, "Content-Length");
    evhttp_send_error(req, 500, nullptr);
    return 0;
  }
  evhttp_send_reply(req, status, reason_phrase(status), b);
  evbuffer_free(b);
  return body.size();
}

size_t HttpServer::reply(evhttp_request* req, int status, std::string_view body) {
  return reply(req, status, body.empty() ? BufferRef() : SharedBuffer::copy_of(body));
}

bool HttpServer::start_stream(evhttp_request* req, int status) {
  if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
    evhttp_send_reply(req, status, reason_phrase(status), nullptr);
    return false;
  }
  evhttp_send_reply_start(req, status, reason_phrase(status));
  return true;
}

void HttpServer::reply_error(evhttp_request* req, const HttpRequestInfo& info, int status, std::string_view why) {
  add_cors_headers(req);
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", "text/plain; charset=utf-8");
  evhttp_add_header(h, "Cache-Control", "no-cache");
  std::string body(why);
  body += '\n';
  log_access(info, status, reply(req, status, body));
}

void HttpServer::log_access(const HttpRequestInfo& info, int status, uint64_t bytes) const {
  if (!ctx_.access_log) return;
  ctx_.access_log->info("{} \"{} {}\" {} {} {}ms", info.peer, method_name(info.method),
                        info.target.empty() ? "-" : info.target, status, bytes, ctx_.timers->now_ms() - info.started_ms);
}

// ---- dispatch -----------------------------------------------------------------------------------

void HttpServer::on_request(evhttp_request* req, void* arg) { static_cast<HttpServer*>(arg)->handle(req); }

void HttpServer::handle(evhttp_request* req) {
  admit_pending();  // a connection's first request may come before on_admit ran
  header_deadline_->forget(evhttp_request_get_connection(req));
  HttpRequestInfo info;
  info.method = method_of(evhttp_request_get_command(req));
  const char* uri = evhttp_request_get_uri(req);
  info.target = uri ? uri : "";
  info.peer = peer_of(req);
  info.started_ms = ctx_.timers->now_ms();
  info.id = ctx_.sessions->next_id();
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  evhttp_add_header(out, "Server", "rill/" RILL_VERSION);
  // Which worker answered (SO_REUSEPORT spreads connections over them): for operators and tests.
  evhttp_add_header(out, "X-Rill-Worker", std::to_string(ctx_.worker_id).c_str());

  RequestTarget target = parse_request_target(info.target);
  if (!target.ok()) {
    ctx_.log->info("http: {} bad request '{:.200}': {}", info.peer, info.target, target.why);
    return reply_error(req, info, target_error_status(target.error), target.why);
  }
  info.path = std::move(target.path);
  info.query = std::move(target.query);
  const HttpRouteTable::Result route = routes_.match(info.method, info.path);
  switch (route.status) {
    case HttpRouteTable::Result::Status::Found:
      return (*route.handler)(req, info);
    case HttpRouteTable::Result::Status::Options:
      return reply_options(req, info, route.allow);
    case HttpRouteTable::Result::Status::MethodNotAllowed:
      // RFC 9110 §15.5.6: "The origin server MUST generate an Allow header field in a 405 response".
      evhttp_add_header(out, "Allow", route.allow.list().c_str());
      return reply_error(req, info, 405, std::string("method ") + method_name(info.method) + " not allowed");
    case HttpRouteTable::Result::Status::NotFound:
      return reply_error(req, info, 404, "not found");
  }
}

void HttpServer::reply_options(evhttp_request* req, const HttpRequestInfo& info, HttpMethods allow) {
  // OPTIONS (RFC 9110 §9.3.7) and the CORS preflight (Fetch standard): the path's methods from
  // the table, any requested headers.
  add_cors_headers(req);
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  const std::string methods = allow.list();
  evhttp_add_header(out, "Access-Control-Allow-Methods", methods.c_str());
  const char* want = evhttp_find_header(evhttp_request_get_input_headers(req), "Access-Control-Request-Headers");
  if (want && std::string_view(want).size() < 1024) evhttp_add_header(out, "Access-Control-Allow-Headers", want);
  evhttp_add_header(out, "Access-Control-Max-Age", "86400");
  evhttp_add_header(out, "Allow", methods.c_str());
  log_access(info, 204, reply(req, 204, std::string_view()));
}

void HttpServer::serve_stream(evhttp_request* req, const HttpRequestInfo& info) {
  const StreamPath sp = parse_stream_path(info.path);
  if (sp.invalid_name) {
    ctx_.log->info("http: {} bad request '{:.200}': {}", info.peer, info.target, sp.why);
    return reply_error(req, info, 400, sp.why);
  }
  for (auto& [kind, handler] : stream_handlers_) {
    if (sp.kind != StreamRoute::None && kind == sp.kind) return handler(req, info, sp);
  }
  reply_error(req, info, 404, "not found");
}

}  // namespace rill::server
