#include "rill/server/hls_remote.h"

#include <string>

#include "rill/http/http_server.h"
#include "rill/server/hls_handler.h"
#include "rill/workers/hls_fetcher.h"
#include "rill/workers/stream_locator.h"

namespace rill::server {

namespace {

// One held request, owned by its exchange (HttpHeldState) until answered or abandoned.
struct PendingHls final : HttpHeldState {
  PendingHls(net::WorkerCore& c, HlsRequest r, std::string w, int slot)
      : ctx(c), req(std::move(r)), what(std::move(w)), owner_slot(slot) {}
  void abandoned(const HttpExchange& ex) override {
    ctx.hls_fetcher->cancel(ticket);
    ctx.log->debug("hls: {} went away while {} was fetched from worker {}", ex.info().peer, what, owner_slot);
  }

  net::WorkerCore& ctx;
  HttpHeld ex;
  HlsRequest req;
  std::string what;  // "live/cam 12.ts", for the log
  int owner_slot;
  workers::HlsFetcher::Ticket ticket = 0;
};

void add_owner_header(HttpExchange& ex, int slot) { ex.add_header("X-Rill-Hls-Owner", std::to_string(slot)); }

void answer(net::WorkerCore& ctx, HttpExchange& ex, const HlsRequest& req, const workers::HlsFetchResult& r,
            const std::string& what, int owner_slot) {
  add_owner_header(ex, owner_slot);
  // The owner's responder answered (any status: the same as the owner's own clients get).
  if (r.answered) return reply_hls_answer(ex, req, r.answer);
  ctx.log->warn("hls: {} answered 503: the owner, worker {}, did not answer {}: {}", ex.info().peer,
                owner_slot, what, r.failure);
  ex.add_header("Retry-After", "1");
  ex.reply_error(503, "HLS " + what + ": the worker that owns the stream (" + std::to_string(owner_slot) +
                          ") did not answer: " + r.failure);
}

}  // namespace

bool serve_hls_from_owner(net::WorkerCore& ctx, HttpExchange& ex, const HlsRequest& req) {
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
      reply_hls_answer(ex, req, a);
      return true;
    }
  }
  // Held first: the fetch answers through the handle, and the state is the exchange's to free.
  auto owned = std::make_unique<PendingHls>(ctx, req, what, owner->slot);
  PendingHls* p = owned.get();
  p->ex = ex.hold(std::move(owned));
  p->ticket =
      ctx.hls_fetcher->fetch(*owner, key.app, key.name, object, [p](const workers::HlsFetchResult& r) {
        // Null: the client left (its abandonment cancelled the fetch: not expected).
        if (HttpExchange* e = p->ex.get()) answer(p->ctx, *e, p->req, r, p->what, p->owner_slot);
      });
  return true;
}

}  // namespace rill::server
