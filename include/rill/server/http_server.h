#pragma once
// HttpServer: libevent's evhttp on the worker's http.listen sockets (no hand-written HTTP
// parser). Every request goes through one route table (http_router.h): the target is parsed
// (400/414), the table picks the handler (405 with Allow, 404), OPTIONS and HEAD are answered
// generically. This class also applies the limits, counts the worker's HTTP connections
// (http.max_connections), adds CORS, writes the access log, and owns the one reply path that
// leaves the body out for HEAD.
//
// Mounted here: GET /healthz, and the stream paths (prefix "/": FLV and HLS, through
// set_stream_handler). Later outputs (JSON API, console) add table entries with routes().add().
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rill/server/http_file_bodies.h"
#include "rill/server/http_header_deadline.h"
#include "rill/core/buffer.h"
#include "rill/core/address_counter.h"
#include "rill/net/server_context.h"
#include "rill/net/tls_connection.h"
#include "rill/server/http_router.h"
#include "rill/server/http_takeover.h"

struct bufferevent;
struct event;
struct evhttp;
struct evhttp_connection;
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
  // Stops taking connections; requests on connections already open are still served (a worker
  // retiring after a reload).
  void close_listeners();

  // The route table: a handler gets the evhttp request and its HttpRequestInfo (decoded path,
  // raw query, peer, method) and must answer the request, now or later.
  HttpRouteTable& routes() { return routes_; }

  // The stream paths (parse_stream_path): one table entry, prefix "/", GET (and so HEAD). A name
  // that breaks the rule gets 400, any other path (or a kind without a handler) 404.
  using StreamHandler = std::function<void(evhttp_request*, const HttpRequestInfo&, const StreamPath&)>;
  void set_stream_handler(StreamRoute kind, StreamHandler h);

  // ---- replies: the one place that knows HEAD ---------------------------------------------
  // A complete response with Content-Length; for HEAD the headers alone, with the length the
  // GET would have had. The body goes to libevent by reference (no copy), or a large one on a plain
  // connection as a memory file sent with sendfile (http_file_bodies.h). Returns the body
  // bytes sent (for the access log). The reason phrase is libevent's standard one for `status`.
  size_t reply(evhttp_request* req, int status, const BufferRef& body);
  size_t reply(evhttp_request* req, int status, std::string_view body);
  // Starts a streamed body (HTTP/1.1 chunked, HTTP/1.0 close-delimited): true when the caller
  // goes on with evhttp_send_reply_chunk; false for HEAD, already answered with the headers
  // alone (no Content-Length: a live body has none).
  bool start_stream(evhttp_request* req, int status);
  // A plain-text error (one line, CORS, no-cache), answered and logged.
  void reply_error(evhttp_request* req, const HttpRequestInfo& info, int status, std::string_view why);

  // Headers every stream response carries, errors included.
  void add_cors_headers(evhttp_request* req) const;
  void log_access(const HttpRequestInfo& info, int status, uint64_t bytes) const;
  static std::string peer_of(evhttp_request* req);

  // ---- connections --------------------------------------------------------------------------
  // evhttp has one close callback per connection and the server uses it to count connections:
  // sessions that need to learn of a close register here (cb null: none any more).
  void set_close_callback(evhttp_connection* conn, void (*cb)(evhttp_connection*, void*), void* arg);
  size_t connections() const { return conns_.size() + taken_; }
  // The socket of a plain-HTTP request's connection, for a session that writes the rest of the
  // response itself (http_takeover.h); counted in the limits until its slot is released. Empty
  // for HTTPS or when the socket cannot be moved: the caller stays on evhttp.
  TakenConnection take_over(evhttp_request* req);
  // HTTPS (http.tls_listen): serves the same routes on `fd` over TLS (http_server_tls.cpp).
  void listen_tls(int fd, std::shared_ptr<net::TlsContext> tls);
  net::ServerContext& context() { return ctx_; }

 private:
  struct Conn {
    void (*cb)(evhttp_connection*, void*) = nullptr;
    void* arg = nullptr;
    std::string addr;  // the client's address, counted in per_address_
  };
  static void on_request(evhttp_request* req, void* arg);
  static bufferevent* on_new_connection(struct event_base* base, void* arg);
  static void on_admit(int, short, void* arg);
  static bufferevent* on_new_tls_connection(struct event_base* base, void* arg);
  friend class HttpConnectionSlot;
  void release_taken(const std::string& addr);
  static void on_free_taken(int, short, void* arg);
  void free_taken();
  void configure(evhttp* h);
  void accept_on(evhttp* h, int fd, std::vector<evhttp_bound_socket*>& bound_list);
  void stop_accepting_tls();
  static void reply_shutting_down(evhttp_request* req, void* arg);  // after stop_accepting
  static void on_connection_closed(evhttp_connection* conn, void* arg);
  void handle(evhttp_request* req);
  void admit_pending();
  void admit(evhttp_connection* conn);
  void serve_stream(evhttp_request* req, const HttpRequestInfo& info);
  void reply_options(evhttp_request* req, const HttpRequestInfo& info, HttpMethods allow);

  net::ServerContext& ctx_;
  evhttp* http_;
  HttpRouteTable routes_;
  std::vector<std::pair<StreamRoute, StreamHandler>> stream_handlers_;
  std::unique_ptr<HttpFileBodies> file_bodies_;  // large bodies by sendfile on plain connections
  std::vector<evhttp_bound_socket*> bound_;
  // Connections accepted but not counted yet (evhttp creates its connection object only after
  // asking us for the bufferevent), and the counted ones.
  std::vector<bufferevent*> pending_;
  event* admit_ev_ = nullptr;
  std::unordered_map<evhttp_connection*, Conn> conns_;
  core::AddressCounter per_address_;  // http.max_connections_per_ip
  std::unique_ptr<HttpHeaderDeadline> header_deadline_;
  // Taken-over connections (http_takeover.cpp): how many are still counted, and the evhttp
  // connections left to free on the next loop turn.
  size_t taken_ = 0;
  std::vector<evhttp_connection*> to_free_;
  event* free_taken_ev_ = nullptr;  // slowloris: first request within timeout
  // HTTPS: a second evhttp (libevent makes one kind of bufferevent per evhttp) with the same
  // handlers and counts; created by the first listen_tls.
  evhttp* https_ = nullptr;
  std::shared_ptr<net::TlsContext> https_tls_;
  std::vector<evhttp_bound_socket*> bound_tls_;
};

}  // namespace rill::server
