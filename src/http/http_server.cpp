#include "rill/http/http_server.h"

#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>

#include "rill/core/access_line.h"
#include "rill/core/version.h"
#include "rill/http/http_connection.h"
#include "rill/net/connection.h"
#include "rill/net/socket.h"

namespace rill::http {

HttpServer::HttpServer(net::WorkerCore& ctx) : ctx_(ctx) {
  sweep_ev_ = event_new(ctx.base, -1, EV_PERSIST, &HttpServer::on_sweep, this);
  timeval tv{1, 0};
  if (sweep_ev_) event_add(sweep_ev_, &tv);
  reap_ev_ = event_new(ctx.base, -1, 0, &HttpServer::on_reap, this);

  routes_.add(HttpMethod::Get, "/healthz", PathMatch::Exact, [this](HttpExchange& ex) {
    ex.add_header("Cache-Control", "no-cache");
    ex.reply(200, "ok worker=" + std::to_string(ctx_.worker_id) + " sessions=" +
                      std::to_string(ctx_.sessions->size()) +
                      (health_fields_ ? health_fields_() : std::string()) +
                      " http_connections=" + std::to_string(connections()) + "\n");
  });
}

HttpServer::~HttpServer() {
  *alive_ = false;
  listeners_.clear();
  // Connections go first: a held exchange's abandon callback may still reach the handlers.
  for (HttpConnection* c : std::vector<HttpConnection*>(conns_.begin(), conns_.end()))
    c->close("server stopping");
  reap();
  if (sweep_ev_) event_free(sweep_ev_);
  if (reap_ev_) event_free(reap_ev_);
}

// ---- listeners --------------------------------------------------------------------------------

void HttpServer::listen(int fd, std::shared_ptr<net::TlsContext> tls) {
  auto a = std::make_unique<net::Acceptor>(
      ctx_.base, fd, tls ? "https" : "http", ctx_.log,
      [this, tls](net::UniqueFd c, const sockaddr_storage& ss) { serve_connection(std::move(c), ss, tls); });
  if (a->ok()) listeners_.push_back(std::move(a));
}

void HttpServer::close_listeners() { listeners_.clear(); }

void HttpServer::stop_accepting() {
  // No new connections (the master keeps the listening sockets); requests on connections
  // already open are answered 503 and their connections closed.
  close_listeners();
  shutting_down_ = true;
}

void HttpServer::serve_connection(net::UniqueFd owned, const sockaddr_storage& ss,
                                  const std::shared_ptr<net::TlsContext>& tls) {
  const auto& hc = ctx_.config->http;
  const std::string peer = net::peer_name(ss);
  if (connections() >= hc.max_connections) {
    ctx_.log->warn("http: {} refused: worker connection limit {} reached", peer, hc.max_connections);
    return;
  }
  std::string addr = core::address_part(peer);
  if (!per_address_.acquire(addr, hc.max_connections_per_ip)) {
    ctx_.log->warn("http: {} refused: max_connections_per_ip {} reached", peer, hc.max_connections_per_ip);
    return;
  }
  if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
    int one = 1;
    setsockopt(owned.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  std::unique_ptr<net::Connection> conn;
  if (tls) {
    conn = std::make_unique<net::TlsConnection>(ctx_.base, *ctx_.flusher, std::move(owned), peer, tls);
  } else {
    conn = std::make_unique<net::PlainConnection>(ctx_.base, *ctx_.flusher, std::move(owned), peer);
  }
  auto* c = new HttpConnection(*this, std::move(conn), std::move(addr));
  conns_.insert(c);
  c->start();
}

// ---- connections ------------------------------------------------------------------------------

void HttpServer::closed(HttpConnection* c) {
  if (conns_.erase(c) == 0) return;
  per_address_.release(c->addr());
  dead_.push_back(c);
  if (reap_ev_) event_active(reap_ev_, EV_TIMEOUT, 0);
}

void HttpServer::on_reap(int, short, void* arg) { static_cast<HttpServer*>(arg)->reap(); }

void HttpServer::reap() {
  // A connection's exchange gives its state up as it goes: connections first, then the states.
  for (HttpConnection* c : std::exchange(dead_, {})) delete c;
  std::exchange(disposed_, {}).clear();  // a state's destructor may give up another
}

void HttpServer::dispose(std::unique_ptr<HttpHeldState> state) {
  if (!state) return;
  disposed_.push_back(std::move(state));
  if (reap_ev_) event_active(reap_ev_, EV_TIMEOUT, 0);
}

std::function<void()> HttpServer::count_stream(const std::string& addr) {
  ++streamed_;
  per_address_.acquire(addr, 0);  // stays counted while the body streams
  return [this, alive = std::weak_ptr<bool>(alive_), addr, done = false]() mutable {
    auto a = alive.lock();
    if (done || !a || !*a) return;
    done = true;
    --streamed_;
    per_address_.release(addr);
  };
}

void HttpServer::on_sweep(int, short, void* arg) { static_cast<HttpServer*>(arg)->sweep(); }

void HttpServer::sweep() {
  const int64_t now = ctx_.timers->now_ms();
  for (HttpConnection* c : std::vector<HttpConnection*>(conns_.begin(), conns_.end())) c->check_deadline(now);
}

const std::string& HttpServer::common_headers() {
  // Server and X-Rill-Worker (which worker answered: SO_REUSEPORT spreads connections over them),
  // and Date (RFC 9110 §6.6.1: IMF-fixdate), rendered once a second.
  const std::time_t now = std::time(nullptr);
  if (now != common_at_ || common_.empty()) {
    common_at_ = now;
    std::tm tm{};
    gmtime_r(&now, &tm);
    char date[64];
    const size_t n = std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    common_ = "Server: rill/" + std::string(core::version()) +
              "\r\nX-Rill-Worker: " + std::to_string(ctx_.worker_id) + "\r\nDate: " + std::string(date, n) +
              "\r\n";
  }
  return common_;
}

// ---- replies ------------------------------------------------------------------------------------

const std::string& HttpServer::cors_lines() const {
  const std::string& origin = ctx_.config->http.cors_origin;
  if (origin.empty()) {
    static const std::string none;
    return none;
  }
  if (origin != cors_origin_ || cors_lines_.empty()) {  // rendered once per http.cors_origin
    cors_origin_ = origin;
    ResponseHeaders h;
    h.add("Access-Control-Allow-Origin", origin);
    h.add("Access-Control-Expose-Headers", "Content-Length, Content-Type, Server");
    if (origin != "*") h.add("Vary", "Origin");
    cors_lines_.assign(h.lines());
  }
  return cors_lines_;
}

void HttpServer::log_access(const HttpExchange& ex, int status, uint64_t bytes) const {
  if (!ctx_.access_log) return;
  const HttpRequestInfo& info = ex.info_;
  const std::string target = core::redact_target(info.target, ctx_.config->log.redact_params);
  const std::string_view* referer = ex.header("Referer");
  const std::string_view* agent = ex.header("User-Agent");
  core::RequestAccess a;
  a.peer = info.peer;
  a.protocol = ex.log_protocol_;
  a.method = method_name(info.method);
  a.target = target;
  a.version = ex.http10() ? "HTTP/1.0" : "HTTP/1.1";
  a.status = status;
  a.bytes_out = bytes;
  a.duration_ms = ctx_.timers->now_ms() - info.started_ms;
  a.referer = referer ? *referer : std::string_view();
  a.agent = agent ? *agent : std::string_view();
  ctx_.access_log->info(core::format_request_access(a, ctx_.config->log.access_format, std::time(nullptr)));
}

// ---- dispatch -----------------------------------------------------------------------------------

void HttpServer::handle(HttpExchange& ex) {
  HttpRequestInfo& info = ex.info_;
  if (shutting_down_) {
    ex.close_after_reply();
    return ex.reply_error(503, "Shutting down");
  }
  RequestTarget target = parse_request_target(info.target);
  if (!target.ok()) {
    ctx_.log->info("http: {} bad request '{:.200}': {}", info.peer,
                   core::redact_target(info.target, ctx_.config->log.redact_params), target.why);
    return ex.reply_error(target_error_status(target.error), target.why);
  }
  info.path = std::move(target.path);
  info.query = std::move(target.query);
  const HttpRouteTable::Result route = routes_.match(info.method, info.path);
  switch (route.status) {
    case HttpRouteTable::Result::Status::Found:
      return (*route.handler)(ex);
    case HttpRouteTable::Result::Status::Options:
      return reply_options(ex, route.allow);
    case HttpRouteTable::Result::Status::MethodNotAllowed:
      // RFC 9110 §15.5.6: "The origin server MUST generate an Allow header field in a 405 response".
      ex.add_header("Allow", route.allow.list());
      return ex.reply_error(405, std::string("method ") + method_name(info.method) + " not allowed");
    case HttpRouteTable::Result::Status::NotFound:
      return ex.reply_error(404, "not found");
  }
}

void HttpServer::reply_options(HttpExchange& ex, HttpMethods allow) {
  // OPTIONS (RFC 9110 §9.3.7) and the CORS preflight (Fetch standard): the path's methods from
  // the table, any requested headers.
  ex.add_cors_headers();
  const std::string methods = allow.list();
  ex.add_header("Access-Control-Allow-Methods", methods);
  const std::string_view* want = ex.header("Access-Control-Request-Headers");
  if (want && want->size() < 1024) ex.add_header("Access-Control-Allow-Headers", *want);
  ex.add_header("Access-Control-Max-Age", "86400");
  ex.add_header("Allow", methods);
  ex.reply(204, std::string_view());
}

}  // namespace rill::http
