#pragma once
// HttpServer: the worker's HTTP/1.1 server on its http.listen sockets (and http.tls_listen, and
// the API's api.listen through ApiServer). Connections are the worker's own net::Connection
// (plain or TLS, like RTMP's) driven by an HttpConnection each (http_connection.h), which parses
// requests with protocol/http_request_head.h and hands each to this class as an HttpExchange.
// Every request goes through one route table (http_router.h): the target is parsed (400/414),
// the table picks the handler (405 with Allow, 404), OPTIONS and HEAD are answered generically.
// This class also applies the limits (http.max_connections, max_connections_per_ip, the
// request-head deadline), renders the CORS lines and writes the access log (for the exchanges,
// which add the one and write the other themselves).
//
// Mounted here: GET /healthz. The stream paths (server/stream_routes.h, on the stream server
// only), the JSON API and the console add table entries with routes().add(); this class knows
// nothing of what they serve.
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "rill/core/address_counter.h"
#include "rill/core/buffer.h"
#include "rill/http/http_exchange.h"
#include "rill/http/http_file_bodies.h"
#include "rill/http/http_router.h"
#include "rill/net/acceptor.h"
#include "rill/net/tls_connection.h"
#include "rill/net/worker_core.h"

struct event;

namespace rill::http {

class HttpServer {
 public:
  explicit HttpServer(net::WorkerCore& ctx);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves a bound, listening socket from the master (net::Acceptor); with `tls` (http.tls_listen,
  // api.tls_listen) the same routes over TLS.
  void listen(int fd, std::shared_ptr<net::TlsContext> tls = nullptr);
  // Stops taking connections; requests on open connections are answered 503 (shutting down).
  void stop_accepting();
  // Stops taking connections; requests on connections already open are still served (a worker
  // retiring after a reload).
  void close_listeners();

  // The route table: a handler gets the exchange (its HttpRequestInfo: decoded path, raw query,
  // peer, method) and must answer it, now or later (HttpExchange::hold).
  HttpRouteTable& routes() { return routes_; }

  // GET /healthz answers "ok worker=N sessions=N[FIELDS] http_connections=N": `fields` (" key=value"
  // pairs, each with its leading space) is what the assembly adds (the worker's stream count).
  void set_health_fields(std::function<std::string()> fields) { health_fields_ = std::move(fields); }

  // ---- what exchanges use ---------------------------------------------------------------------
  // The CORS header lines of http.cors_origin, rendered once per origin (empty: none).
  const std::string& cors_lines() const;
  // The access log line of an answered exchange (reply, take_stream's HEAD); a streamed body's
  // owner writes a session line of its own when it ends (core/access_line.h).
  void log_access(const HttpExchange& ex, int status, uint64_t bytes) const;
  // A held exchange's state it gave up (answered, held again, abandoned): destroyed on the next
  // loop turn, never inside the callback that answered (HttpHeldState).
  void dispose(std::unique_ptr<HttpHeldState> state);

  // ---- connections ------------------------------------------------------------------------
  size_t connections() const { return conns_.size() + streamed_; }
  net::WorkerCore& context() { return ctx_; }

  // ---- for HttpConnection ------------------------------------------------------------------
  void handle(HttpExchange& ex);   // a complete request
  void closed(HttpConnection* c);  // the connection ended: forget it (it destroys itself next)
  // A connection handed to a streamed body stays counted until the returned function runs.
  std::function<void()> count_stream(const std::string& addr);
  bool shutting_down() const { return shutting_down_; }
  // "Server", "X-Rill-Worker" and "Date" lines of every response, rendered once a second.
  const std::string& common_headers();
  // Large bodies of plain connections as memory files (http.sendfile), shared by the worker's
  // connections.
  HttpFileBodies& file_bodies() { return file_bodies_; }

 private:
  // A connection one of the acceptors took; `tls` null: plain.
  void serve_connection(net::UniqueFd fd, const sockaddr_storage& ss, const std::shared_ptr<net::TlsContext>& tls);
  static void on_reap(int, short, void* arg);
  void reap();  // deletes the connections that ended and the held states given up
  static void on_sweep(int, short, void* arg);
  void sweep();  // request-head deadlines and idle keep-alive connections
  void reply_options(HttpExchange& ex, HttpMethods allow);

  net::WorkerCore& ctx_;
  HttpRouteTable routes_;
  std::function<std::string()> health_fields_;
  std::vector<std::unique_ptr<net::Acceptor>> listeners_;
  std::unordered_set<HttpConnection*> conns_;  // owned; closed() moves one to dead_
  std::vector<HttpConnection*> dead_;          // deleted on the next loop turn (never on their own stack)
  std::vector<std::unique_ptr<HttpHeldState>> disposed_;  // the same, for held states
  size_t streamed_ = 0;                        // handed to streamed bodies, still counted
  core::AddressCounter per_address_;           // http.max_connections_per_ip
  HttpFileBodies file_bodies_;
  event* sweep_ev_ = nullptr;
  event* reap_ev_ = nullptr;
  std::string common_;
  std::time_t common_at_ = 0;
  mutable std::string cors_origin_;  // the http.cors_origin that cors_lines_ were rendered for
  mutable std::string cors_lines_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for count_stream's release
  bool shutting_down_ = false;
};

}  // namespace rill::http
