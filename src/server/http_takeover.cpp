// Taking plain-HTTP connections away from evhttp (http_takeover.h): the socket hand-over, the
// response head, and HttpServer's side (counts, deferred free).
#include "rill/server/http_takeover.h"

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

#include <ctime>

#include "rill/server/http_server.h"

namespace rill::server {

// ---- the socket ----------------------------------------------------------------------------------

net::UniqueFd detach_evhttp_socket(evhttp_connection* conn) {
  bufferevent* bev = conn ? evhttp_connection_get_bufferevent(conn) : nullptr;
  const int old_fd = bev ? static_cast<int>(bufferevent_getfd(bev)) : -1;
  if (old_fd < 0) return {};
  net::UniqueFd placeholder(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!placeholder) return {};
  net::UniqueFd moved(::fcntl(old_fd, F_DUPFD_CLOEXEC, 0));
  if (!moved) return {};
  // The events go while old_fd still names the socket, so that epoll forgets (old_fd, socket);
  // read and write timeouts live on the same events.
  bufferevent_disable(bev, EV_READ | EV_WRITE);
  if (::dup2(placeholder.get(), old_fd) < 0) {
    bufferevent_enable(bev, EV_READ);  // evhttp keeps the connection (it rearms writes itself)
    return {};
  }
  return moved;
}

// ---- the response head ---------------------------------------------------------------------------

namespace {

bool is_framing_header(const char* name) {
  return strcasecmp(name, "Connection") == 0 || strcasecmp(name, "Transfer-Encoding") == 0 ||
         strcasecmp(name, "Content-Length") == 0;
}

// RFC 9110 §5.6.7: IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT".
std::string http_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buf, n);
}

}  // namespace

std::string render_response_head(evhttp_request* req, int status, const char* reason, bool chunked) {
  // The status line carries the request's version, as evhttp's own replies do.
  std::string h = "HTTP/" + std::to_string(req->major) + "." + std::to_string(req->minor) + " " +
                  std::to_string(status) + " " + (reason ? reason : "OK") + "\r\n";
  bool has_date = false;
  for (const evkeyval* kv = evhttp_request_get_output_headers(req)->tqh_first; kv; kv = kv->next.tqe_next) {
    if (is_framing_header(kv->key)) continue;
    has_date = has_date || strcasecmp(kv->key, "Date") == 0;
    h.append(kv->key).append(": ").append(kv->value).append("\r\n");
  }
  // RFC 9110 §6.6.1: "An origin server with a clock ... MUST generate a Date header field".
  if (!has_date) h.append("Date: ").append(http_date()).append("\r\n");
  if (chunked) h.append("Transfer-Encoding: chunked\r\n");
  // The socket is not returned to evhttp: one response per connection.
  h.append("Connection: close\r\n\r\n");
  return h;
}

// ---- HttpServer's side ---------------------------------------------------------------------------

HttpConnectionSlot& HttpConnectionSlot::operator=(HttpConnectionSlot&& o) noexcept {
  if (this != &o) {
    release();
    server_ = std::exchange(o.server_, nullptr);
    addr_ = std::move(o.addr_);
  }
  return *this;
}

void HttpConnectionSlot::release() {
  if (HttpServer* s = std::exchange(server_, nullptr)) s->release_taken(addr_);
}

TakenConnection HttpServer::take_over(evhttp_request* req) {
  evhttp_connection* conn = req ? evhttp_request_get_connection(req) : nullptr;
  if (!conn || evhttp_connection_get_server(conn) != http_) return {};  // HTTPS stays on evhttp
  net::UniqueFd fd = detach_evhttp_socket(conn);
  if (!fd) return {};
  header_deadline_->forget(conn);
  std::string addr;
  if (auto it = conns_.find(conn); it != conns_.end()) {
    addr = std::move(it->second.addr);
    conns_.erase(it);
  } else {
    addr = core::address_part(peer_of(req));
    per_address_.acquire(addr, 0);  // not admitted yet: count it now (already serving it)
  }
  // evhttp must not report this connection closed: the slot now holds its count.
  evhttp_connection_set_closecb(conn, nullptr, nullptr);
  ++taken_;
  if (!free_taken_ev_) free_taken_ev_ = event_new(ctx_.base, -1, 0, &HttpServer::on_free_taken, this);
  to_free_.push_back(conn);
  event_active(free_taken_ev_, EV_TIMEOUT, 0);
  return TakenConnection{std::move(fd), HttpConnectionSlot(this, std::move(addr))};
}

void HttpServer::release_taken(const std::string& addr) {
  --taken_;
  per_address_.release(addr);
}

void HttpServer::on_free_taken(int, short, void* arg) { static_cast<HttpServer*>(arg)->free_taken(); }

// Frees the evhttp side of taken-over connections (and their requests): out of every evhttp
// callback, with the old descriptor pointing at /dev/null.
void HttpServer::free_taken() {
  for (evhttp_connection* conn : std::exchange(to_free_, {})) evhttp_connection_free(conn);
}

}  // namespace rill::server
