#include "rill/server/http_header_deadline.h"

#include <event2/event.h>
#include <event2/http.h>

#include <vector>

namespace rill::server {

HttpHeaderDeadline::HttpHeaderDeadline(net::ServerContext& ctx, int64_t limit_ms) : ctx_(ctx), limit_ms_(limit_ms) {
  timer_ = event_new(ctx_.base, -1, EV_PERSIST, &HttpHeaderDeadline::on_timer, this);
  timeval tv{1, 0};
  if (timer_) event_add(timer_, &tv);
}

HttpHeaderDeadline::~HttpHeaderDeadline() {
  if (timer_) event_free(timer_);
}

void HttpHeaderDeadline::watch(evhttp_connection* conn) { accepted_ms_.emplace(conn, ctx_.timers->now_ms()); }

void HttpHeaderDeadline::forget(evhttp_connection* conn) { accepted_ms_.erase(conn); }

void HttpHeaderDeadline::on_timer(int, short, void* arg) { static_cast<HttpHeaderDeadline*>(arg)->sweep(); }

void HttpHeaderDeadline::sweep() {
  const int64_t now = ctx_.timers->now_ms();
  std::vector<evhttp_connection*> expired;
  for (const auto& [conn, since] : accepted_ms_)
    if (now - since >= limit_ms_) expired.push_back(conn);
  for (auto* conn : expired) {
    accepted_ms_.erase(conn);
    char* addr = nullptr;
    ev_uint16_t port = 0;
    evhttp_connection_get_peer(conn, &addr, &port);
    ctx_.log->info("http: {}:{} closed: no complete request within http.timeout ({} ms)", addr ? addr : "?", port,
                   limit_ms_);
    evhttp_connection_free(conn);  // runs the server's close callback, which forgets it (no-op)
  }
}

}  // namespace rill::server
