#pragma once
// Taking a plain-HTTP connection away from evhttp: a long-lived response (HTTP-FLV) whose request
// was parsed, routed and admitted by evhttp goes on as a net::PlainConnection, written with the
// same shared buffers and one sendmsg per flush as an RTMP player, with no bufferevent layer.
//
// The socket changes hands without a byte lost or a FIN sent. libevent 2.1's
// evhttp_connection_free() ends with shutdown(fd, SHUT_WR) on the descriptor it was given at
// accept time (evcon->fd, private; bufferevent_setfd(bev, -1) does not clear it), and shutdown
// acts on the socket, not on one descriptor of it: a dup() alone would not save the connection.
// So the socket moves to a new descriptor (F_DUPFD_CLOEXEC), the bufferevent's events are removed
// from the event base while the old descriptor still names the socket, and the old descriptor is
// then pointed at /dev/null (dup2): evhttp's shutdown() fails with ENOTSOCK and its bufferevent
// (BEV_OPT_CLOSE_ON_FREE) closes the /dev/null descriptor. The evhttp connection and its request
// are freed on the next loop turn, never from inside the request callback that is on the stack.
//
// HTTPS connections are not taken over: their bytes go through OpenSSL in the bufferevent.
#include <string>

#include "rill/net/socket.h"

struct evhttp_connection;
struct evhttp_request;

namespace rill::server {

class HttpServer;

// One counted HTTP connection (http.max_connections, http.max_connections_per_ip) that left
// evhttp: counted until release() (or destruction). Move-only.
class HttpConnectionSlot {
 public:
  HttpConnectionSlot() = default;
  HttpConnectionSlot(HttpServer* server, std::string addr) : server_(server), addr_(std::move(addr)) {}
  HttpConnectionSlot(HttpConnectionSlot&& o) noexcept : server_(std::exchange(o.server_, nullptr)), addr_(std::move(o.addr_)) {}
  HttpConnectionSlot& operator=(HttpConnectionSlot&& o) noexcept;
  HttpConnectionSlot(const HttpConnectionSlot&) = delete;
  HttpConnectionSlot& operator=(const HttpConnectionSlot&) = delete;
  ~HttpConnectionSlot() { release(); }
  // Idempotent. Call it before the HttpServer goes (sessions close before the server).
  void release();

 private:
  HttpServer* server_ = nullptr;
  std::string addr_;
};

struct TakenConnection {
  net::UniqueFd fd;  // the socket, non-blocking; empty when not taken over
  HttpConnectionSlot slot;
  explicit operator bool() const { return static_cast<bool>(fd); }
};

// Moves the socket of `conn` to a new descriptor and disarms evhttp's hold on it (see above).
// The caller must then free `conn` (evhttp_connection_free) without a close callback armed.
// An empty fd when the socket cannot be moved (descriptors exhausted): conn is left as it was.
net::UniqueFd detach_evhttp_socket(evhttp_connection* conn);

// The status line and headers of a response written on a taken-over socket: the request's
// output headers (Server, CORS, Content-Type... as evhttp would send them), Date, Connection:
// close, and Transfer-Encoding: chunked when `chunked`.
std::string render_response_head(evhttp_request* req, int status, const char* reason, bool chunked);

}  // namespace rill::server
