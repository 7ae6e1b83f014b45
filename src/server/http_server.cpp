#include "rill/server/http_server.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <unistd.h>

#include <string>

namespace rill::server {

namespace {

const char* method_name(evhttp_cmd_type t) {
  switch (t) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_HEAD: return "HEAD";
    case EVHTTP_REQ_OPTIONS: return "OPTIONS";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_PATCH: return "PATCH";
    case EVHTTP_REQ_TRACE: return "TRACE";
    case EVHTTP_REQ_CONNECT: return "CONNECT";
  }
  return "?";
}

}  // namespace

HttpServer::HttpServer(net::ServerContext& ctx) : ctx_(ctx), http_(evhttp_new(ctx.base)) {
  const auto& hc = ctx_.config->http;
  evhttp_set_max_headers_size(http_, static_cast<ev_ssize_t>(hc.max_header_size));
  evhttp_set_max_body_size(http_, static_cast<ev_ssize_t>(hc.max_body_size));
  timeval tv{static_cast<time_t>(hc.timeout.count() / 1000), static_cast<suseconds_t>((hc.timeout.count() % 1000) * 1000)};
  evhttp_set_timeout_tv(http_, &tv);
  // Every method evhttp knows reaches us, so that POST & co get 405 from us. A method token
  // evhttp does not know gets 501 from evhttp, as RFC 9110 §9.1 asks ("An origin server that
  // receives a request method that is unrecognized or not implemented SHOULD respond with the
  // 501 (Not Implemented) status code").
  evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_POST |
                                        EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH | EVHTTP_REQ_TRACE |
                                        EVHTTP_REQ_CONNECT);
  evhttp_set_default_content_type(http_, "text/plain; charset=utf-8");
  evhttp_set_gencb(http_, &HttpServer::on_request, this);
}

HttpServer::~HttpServer() { evhttp_free(http_); }

void HttpServer::listen(int fd) {
  evutil_make_socket_nonblocking(fd);
  // evhttp closes the fd when freed; the master keeps its own copy for respawns.
  int own = dup(fd);
  evhttp_bound_socket* bound = own >= 0 ? evhttp_accept_socket_with_handle(http_, own) : nullptr;
  if (!bound) {
    ctx_.log->error("http: cannot accept on listener fd {}", fd);
    if (own >= 0) ::close(own);
    return;
  }
  bound_.push_back(bound);
}

void HttpServer::stop_accepting() {
  // Removing the bound sockets stops new connections (the master keeps the listening sockets);
  // requests on connections already open are answered 503.
  for (auto* b : bound_) evhttp_del_accept_socket(http_, b);
  bound_.clear();
  evhttp_set_gencb(http_, [](evhttp_request* req, void*) {
    evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    evhttp_send_error(req, 503, "Shutting down");
  }, nullptr);
}

void HttpServer::set_handler(HttpRoute::Kind kind, Handler h) { handlers_.emplace_back(kind, std::move(h)); }

std::string HttpServer::peer_of(evhttp_request* req) {
  evhttp_connection* conn = evhttp_request_get_connection(req);
  if (!conn) return "?";
  char* addr = nullptr;
  uint16_t port = 0;
  evhttp_connection_get_peer(conn, &addr, &port);
  std::string a = addr ? addr : "?";
  if (a.find(':') != std::string::npos) a = "[" + a + "]";
  return a + ":" + std::to_string(port);
}

void HttpServer::add_cors_headers(evhttp_request* req) const {
  const std::string& origin = ctx_.config->http.cors_origin;
  if (origin.empty()) return;
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Access-Control-Allow-Origin", origin.c_str());
  evhttp_add_header(h, "Access-Control-Expose-Headers", "Content-Length, Content-Type, Server");
  if (origin != "*") evhttp_add_header(h, "Vary", "Origin");
}

size_t HttpServer::send_error(evhttp_request* req, int code, const char* reason, const std::string& body) {
  add_cors_headers(req);
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", "text/plain; charset=utf-8");
  evhttp_add_header(h, "Cache-Control", "no-cache");
  return send_body(req, code, reason, body + "\n");
}

size_t HttpServer::send_body(evhttp_request* req, int code, const char* reason, const std::string& body) {
  // libevent 2.1 sends whatever body it is given, HEAD or not: a HEAD reply gets the headers
  // (with the Content-Length the GET would have had) and no body (RFC 9110 §9.3.2).
  evbuffer* b = evbuffer_new();
  if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Length", std::to_string(body.size()).c_str());
  } else {
    evbuffer_add(b, body.data(), body.size());
  }
  evhttp_send_reply(req, code, reason, b);
  evbuffer_free(b);
  return evhttp_request_get_command(req) == EVHTTP_REQ_HEAD ? 0 : body.size();
}

void HttpServer::log_access(evhttp_request* req, int status, uint64_t bytes, int64_t started_ms,
                            const std::string* peer) const {
  if (!ctx_.access_log) return;
  const char* uri = evhttp_request_get_uri(req);
  ctx_.access_log->info("{} \"{} {}\" {} {} {}ms", peer ? *peer : peer_of(req), method_name(evhttp_request_get_command(req)),
                        uri ? uri : "-", status, bytes, ctx_.timers->now_ms() - started_ms);
}

void HttpServer::on_request(evhttp_request* req, void* arg) { static_cast<HttpServer*>(arg)->handle(req); }

void HttpServer::handle(evhttp_request* req) {
  int64_t started = ctx_.timers->now_ms();
  const char* uri = evhttp_request_get_uri(req);
  evhttp_cmd_type method = evhttp_request_get_command(req);
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  evhttp_add_header(out, "Server", "rill/" RILL_VERSION);
  // Which worker answered (SO_REUSEPORT spreads connections over them): for operators and tests.
  evhttp_add_header(out, "X-Rill-Worker", std::to_string(ctx_.worker_id).c_str());

  auto reply_error = [&](int code, const char* reason, const std::string& body) {
    log_access(req, code, send_error(req, code, reason, body), started);
  };

  if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD && method != EVHTTP_REQ_OPTIONS) {
    evhttp_add_header(out, "Allow", "GET, HEAD, OPTIONS");
    return reply_error(405, "Method Not Allowed", std::string("method ") + method_name(method) + " not allowed");
  }
  HttpRouterLimits lim;
  HttpRoute route = route_http(uri ? uri : "", lim);
  if (route.kind == HttpRoute::Kind::BadRequest) {
    ctx_.log->info("http: {} bad request '{:.200}': {}", peer_of(req), uri ? uri : "", route.error);
    bool too_long = route.error.find("longer than") != std::string::npos;
    return reply_error(too_long ? 414 : 400, too_long ? "URI Too Long" : "Bad Request", route.error);
  }
  if (method == EVHTTP_REQ_OPTIONS) {
    // CORS preflight (Fetch standard): allow the simple methods and any requested headers.
    add_cors_headers(req);
    evhttp_add_header(out, "Access-Control-Allow-Methods", "GET, HEAD, OPTIONS");
    const char* want = evhttp_find_header(evhttp_request_get_input_headers(req), "Access-Control-Request-Headers");
    if (want && std::string_view(want).size() < 1024) evhttp_add_header(out, "Access-Control-Allow-Headers", want);
    evhttp_add_header(out, "Access-Control-Max-Age", "86400");
    evhttp_add_header(out, "Allow", "GET, HEAD, OPTIONS");
    evhttp_send_reply(req, 204, "No Content", nullptr);
    log_access(req, 204, 0, started);
    return;
  }
  if (route.kind == HttpRoute::Kind::Health) {
    evhttp_add_header(out, "Cache-Control", "no-cache");
    std::string line = "ok worker=" + std::to_string(ctx_.worker_id) + " sessions=" +
                       std::to_string(ctx_.sessions->size()) + " streams=" + std::to_string(ctx_.streams->size()) + "\n";
    log_access(req, 200, send_body(req, 200, "OK", line), started);
    return;
  }
  if (route.kind != HttpRoute::Kind::NotFound) {
    for (auto& [kind, h] : handlers_) {
      if (kind == route.kind) return h(req, route);
    }
  }
  reply_error(404, "Not Found", "not found");
}

}  // namespace rill::server
