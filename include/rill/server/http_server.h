#pragma once
// HttpServer: libevent's evhttp on the worker's http.listen sockets (no hand-written HTTP
// parser). Routing happens in one place (route_http); this class applies the limits, CORS,
// HEAD/OPTIONS, the access log, and hands stream routes to their handlers.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rill/server/http_router.h"
#include "rill/net/server_context.h"

struct evhttp;
struct evhttp_request;
struct evhttp_bound_socket;

namespace rill::server {

class HttpServer {
 public:
  explicit HttpServer(net::ServerContext& ctx);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void listen(int fd);  // a bound, listening socket from the master
  void stop_accepting();

  // Later outputs (HLS, API) register here: a handler for a route kind answers the request.
  using Handler = std::function<void(evhttp_request*, const HttpRoute&)>;
  void set_handler(HttpRoute::Kind kind, Handler h);

  // Helpers for handlers: headers every stream response carries (CORS), plain error replies.
  void add_cors_headers(evhttp_request* req) const;
  // Sends a complete reply (no body for HEAD); returns the body bytes sent (for the access log).
  size_t send_body(evhttp_request* req, int code, const char* reason, const std::string& body);
  // Returns the body size (for the access log).
  size_t send_error(evhttp_request* req, int code, const char* reason, const std::string& body);
  // `peer` when already known (after a disconnect the request no longer has a connection).
  void log_access(evhttp_request* req, int status, uint64_t bytes, int64_t started_ms,
                  const std::string* peer = nullptr) const;
  static std::string peer_of(evhttp_request* req);

 private:
  static void on_request(evhttp_request* req, void* arg);
  void handle(evhttp_request* req);

  net::ServerContext& ctx_;
  evhttp* http_;
  std::vector<std::pair<HttpRoute::Kind, Handler>> handlers_;
  std::vector<evhttp_bound_socket*> bound_;
};

}  // namespace rill::server
