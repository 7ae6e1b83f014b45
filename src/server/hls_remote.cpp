#include "rill/server/hls_remote.h"

#include <string>

#include "rill/http/http_server.h"
#include "rill/server/hls_handler.h"
#include "rill/workers/hls_fetcher.h"
#include "rill/workers/stream_locator.h"

namespace rill::server {

// One held request, owned by its exchange (HttpHeldState) until answered or abandoned.
struct HlsRemote::Pending final : HttpHeldState {
  Pending(HlsRemote& rm, HlsHandler& h, HlsRequest r, std::string w, int slot)
      : remote(rm), hls(h), req(std::move(r)), what(std::move(w)), owner_slot(slot) {}
  void abandoned(const HttpExchange& ex) override {
    remote.fetcher_.cancel(ticket);
    remote.core_.log->debug("hls: {} went away while {} was fetched from worker {}", ex.info().peer, what,
                            owner_slot);
  }
  void answer(HttpExchange& ex, const workers::HlsFetchResult& r);

  HlsRemote& remote;
  HlsHandler& hls;
  HttpHeld ex;
  HlsRequest req;
  std::string what;  // "live/cam 12.ts", for the log
  int owner_slot;
  workers::HlsFetcher::Ticket ticket = 0;
};

namespace {

void add_owner_header(HttpExchange& ex, int slot) { ex.add_header("X-Rill-Hls-Owner", std::to_string(slot)); }

}  // namespace

void HlsRemote::Pending::answer(HttpExchange& ex, const workers::HlsFetchResult& r) {
  add_owner_header(ex, owner_slot);
  // The owner's responder answered (any status: the same as the owner's own clients get).
  if (r.answered) return hls.reply(ex, req, r.answer);
  remote.core_.log->warn("hls: {} answered 503: the owner, worker {}, did not answer {}: {}", ex.info().peer,
                         owner_slot, what, r.failure);
  ex.add_header("Retry-After", "1");
  ex.reply_error(503, "HLS " + what + ": the worker that owns the stream (" + std::to_string(owner_slot) +
                          ") did not answer: " + r.failure);
}

bool HlsRemote::serve(HlsHandler& hls, HttpExchange& ex, const HlsRequest& req) {
  if (!req.app || !req.app->hls.enabled) return false;  // the local path answers 404
  const media::StreamKey& key = req.key;
  const protocol::HlsObjectName& object = req.object;
  const std::string name = key.str();
  const auto owner = locator_.hls_source(name);
  if (!owner) return false;
  const std::string what = name + " " + protocol::format_hls_object(object);

  if (!object.playlist) {
    if (const auto* hit = fetcher_.cached(*owner, name, object)) {
      add_owner_header(ex, owner->slot);
      media::HlsAnswer a;  // what the owner answered when it was fetched
      a.head.cache = protocol::HlsCachePolicy::immutable(hit->max_age_s);
      a.body = hit->data;
      hls.reply(ex, req, a);
      return true;
    }
  }
  // Held first: the fetch answers through the handle, and the state is the exchange's to free.
  auto owned = std::make_unique<Pending>(*this, hls, req, what, owner->slot);
  Pending* p = owned.get();
  p->ex = ex.hold(std::move(owned));
  p->ticket = fetcher_.fetch(*owner, key.app, key.name, object, [p](const workers::HlsFetchResult& r) {
    // Null: the client left (its abandonment cancelled the fetch: not expected).
    if (HttpExchange* e = p->ex.get()) p->answer(*e, r);
  });
  return true;
}

}  // namespace rill::server
