#include "rill/server/hls_remote.h"

#include <event2/http.h>

#include <string>

#include "rill/workers/hls_fetcher.h"
#include "rill/workers/stream_locator.h"
#include "rill/server/hls_handler.h"
#include "rill/server/http_server.h"

namespace rill::server {

namespace {

// One held request. Deleted when answered or when its client goes away, whichever comes first.
struct PendingHls {
  net::ServerContext& ctx;
  HttpServer& http;
  evhttp_request* req;
  std::string what;  // "live/cam 12.ts", for the log
  std::string peer;
  int64_t started;
  int owner_slot;
  workers::HlsFetcher::Ticket ticket = 0;
};

void add_owner_header(evhttp_request* req, int slot) {
  evhttp_add_header(evhttp_request_get_output_headers(req), "X-Rill-Hls-Owner", std::to_string(slot).c_str());
}

void answer(net::ServerContext& ctx, HttpServer& http, evhttp_request* req, const protocol::HlsObjectName& object,
            const workers::HlsFetchResult& r, const std::string& what, int owner_slot, int64_t started) {
  using Status = workers::HlsFetchResult::Status;
  add_owner_header(req, owner_slot);
  switch (r.status) {
    case Status::Ok:
      if (object.playlist) return reply_hls_playlist(http, req, r.body, started);
      return reply_hls_segment(http, req, r.body, r.max_age_s, started);
    case Status::NotFound:
      return reply_hls_not_found(http, req, r.reason, started);
    case Status::Unavailable: {
      ctx.log->warn("hls: {} answered 503: the owner, worker {}, did not answer {}: {}", HttpServer::peer_of(req),
                    owner_slot, what, r.reason);
      evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
      const size_t n = http.send_error(req, 503, "Service Unavailable",
                                       "HLS " + what + ": the worker that owns the stream (" +
                                           std::to_string(owner_slot) + ") did not answer: " + r.reason);
      http.log_access(req, 503, n, started);
      return;
    }
  }
}

void on_client_close(evhttp_connection*, void* arg) {
  auto* p = static_cast<PendingHls*>(arg);
  p->ctx.hls_fetcher->cancel(p->ticket);
  p->ctx.log->debug("hls: {} went away while {} was fetched from worker {}", p->peer, p->what, p->owner_slot);
  // A request whose client went away is detached from its connection; libevent frees it only
  // while it is still attached (the connection being freed), so a detached one is ours to free.
  if (evhttp_request_get_connection(p->req) == nullptr) evhttp_request_free(p->req);
  delete p;
}

}  // namespace

bool serve_hls_from_owner(net::ServerContext& ctx, HttpServer& http, evhttp_request* req, const HttpRoute& route,
                          const protocol::HlsObjectName& object, int64_t started) {
  if (!ctx.locator || !ctx.hls_fetcher) return false;
  const config::AppConfig* app = ctx.config->find_app(route.app);
  if (!app || !app->hls.enabled) return false;  // the local path answers 404
  const std::string key = route.app + "/" + route.stream;
  const auto owner = ctx.locator->remote_owner(key);
  if (!owner) return false;
  const std::string what = key + " " + protocol::format_hls_object(object);

  if (!object.playlist) {
    if (const auto* hit = ctx.hls_fetcher->cached(*owner, key, object.sequence)) {
      add_owner_header(req, owner->slot);
      reply_hls_segment(http, req, hit->data, hit->max_age_s, started);
      return true;
    }
  }
  evhttp_connection* conn = evhttp_request_get_connection(req);
  auto* p = new PendingHls{ctx, http, req, what, HttpServer::peer_of(req), started, owner->slot};
  p->ticket = ctx.hls_fetcher->fetch(*owner, route.app, route.stream, object,
                                     [p, object](const workers::HlsFetchResult& r) {
                                       evhttp_connection* c = evhttp_request_get_connection(p->req);
                                       if (c) evhttp_connection_set_closecb(c, nullptr, nullptr);
                                       answer(p->ctx, p->http, p->req, object, r, p->what, p->owner_slot, p->started);
                                       delete p;
                                     });
  evhttp_connection_set_closecb(conn, &on_client_close, p);
  return true;
}

}  // namespace rill::server
