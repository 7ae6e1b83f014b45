#include "rill/server/hls_remote.h"

#include <string>

#include "rill/http/http_server.h"
#include "rill/server/hls_handler.h"
#include "rill/workers/hls_fetcher.h"
#include "rill/workers/stream_locator.h"

namespace rill::server {

namespace {

// One held request. Deleted when answered or when its client goes away, whichever comes first.
struct PendingHls {
  net::WorkerCore& ctx;
  HttpServer& http;
  HttpHeld ex;
  HttpRequestInfo info;
  HlsRequest req;
  std::string what;  // "live/cam 12.ts", for the log
  int owner_slot;
  workers::HlsFetcher::Ticket ticket = 0;
};

void add_owner_header(HttpExchange& ex, int slot) { ex.add_header("X-Rill-Hls-Owner", std::to_string(slot)); }

void answer(net::WorkerCore& ctx, HttpServer& http, HttpExchange& ex, const HttpRequestInfo& info,
            const HlsRequest& req, const workers::HlsFetchResult& r, const std::string& what, int owner_slot) {
  add_owner_header(ex, owner_slot);
  // The owner's responder answered (any status: the same as the owner's own clients get).
  if (r.answered) return reply_hls_answer(http, ex, info, req, r.answer);
  ctx.log->warn("hls: {} answered 503: the owner, worker {}, did not answer {}: {}", info.peer, owner_slot,
                what, r.failure);
  ex.add_header("Retry-After", "1");
  http.reply_error(ex, info, 503,
                   "HLS " + what + ": the worker that owns the stream (" + std::to_string(owner_slot) +
                       ") did not answer: " + r.failure);
}

}  // namespace

bool serve_hls_from_owner(net::WorkerCore& ctx, HttpServer& http, HttpExchange& ex,
                          const HttpRequestInfo& info, const HlsRequest& req) {
  if (!ctx.locator || !ctx.hls_fetcher) return false;
  if (!req.app || !req.app->hls.enabled) return false;  // the local path answers 404
  const media::StreamKey& key = req.key;
  const protocol::HlsObjectName& object = req.object;
  const std::string name = key.str();
  const auto owner = ctx.locator->hls_source(name);
  if (!owner) return false;
  const std::string what = name + " " + protocol::format_hls_object(object);

  if (!object.playlist) {
    if (const auto* hit = ctx.hls_fetcher->cached(*owner, name, object)) {
      add_owner_header(ex, owner->slot);
      media::HlsAnswer a;  // what the owner answered when it was fetched
      a.head.cache = protocol::HlsCachePolicy::immutable(hit->max_age_s);
      a.body = hit->data;
      reply_hls_answer(http, ex, info, req, a);
      return true;
    }
  }
  auto* p = new PendingHls{ctx, http, ex.hold(), info, req, what, owner->slot};
  p->ticket = ctx.hls_fetcher->fetch(
      *owner, key.app, key.name, object, [p](const workers::HlsFetchResult& r) {
        if (HttpExchange* e = p->ex.get()) {  // null: the client left (nothing to answer)
          e->on_abandoned(nullptr);
          answer(p->ctx, p->http, *e, p->info, p->req, r, p->what, p->owner_slot);
        }
        delete p;
      });
  ex.on_abandoned([p] {
    p->ctx.hls_fetcher->cancel(p->ticket);
    p->ctx.log->debug("hls: {} went away while {} was fetched from worker {}", p->info.peer, p->what,
                      p->owner_slot);
    delete p;
  });
  return true;
}

}  // namespace rill::server
