#include "rill/server/hls_remote.h"

#include <string>

#include "rill/server/hls_handler.h"
#include "rill/server/http_server.h"
#include "rill/workers/hls_fetcher.h"
#include "rill/workers/stream_locator.h"

namespace rill::server {

namespace {

// One held request. Deleted when answered or when its client goes away, whichever comes first.
struct PendingHls {
  net::ServerContext& ctx;
  HttpServer& http;
  HttpHeld ex;
  HttpRequestInfo info;
  std::string what;  // "live/cam 12.ts", for the log
  int owner_slot;
  workers::HlsFetcher::Ticket ticket = 0;
};

void add_owner_header(HttpExchange& ex, int slot) { ex.add_header("X-Rill-Hls-Owner", std::to_string(slot)); }

void answer(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex, const HttpRequestInfo& info,
            const protocol::HlsObjectName& object, const workers::HlsFetchResult& r, const std::string& what,
            int owner_slot) {
  using Status = workers::HlsFetchResult::Status;
  add_owner_header(ex, owner_slot);
  switch (r.status) {
    case Status::Ok:
      if (object.playlist) {
        // An LL-HLS blocking response comes with the max-age the owner gave it (hls_blocking.h).
        const std::string cc = r.max_age_s ? "max-age=" + std::to_string(r.max_age_s) : "no-cache";
        return reply_hls_playlist(http, ex, info, r.body, cc.c_str());
      }
      return reply_hls_segment(http, ex, info, r.body, r.max_age_s, object.form);
    case Status::NotFound:
      // The owner's LL-HLS refusals: a position too far ahead, or one that did not come in time.
      if (r.reason.starts_with("bad request: ")) return http.reply_error(ex, info, 400, r.reason);
      if (r.reason.starts_with("unavailable: ")) {
        ex.add_header("Retry-After", "1");
        return http.reply_error(ex, info, 503, r.reason);
      }
      return http.reply_error(ex, info, 404, r.reason);
    case Status::Unavailable:
      ctx.log->warn("hls: {} answered 503: the owner, worker {}, did not answer {}: {}", info.peer,
                    owner_slot, what, r.reason);
      ex.add_header("Retry-After", "1");
      return http.reply_error(ex, info, 503,
                              "HLS " + what + ": the worker that owns the stream (" +
                                  std::to_string(owner_slot) + ") did not answer: " + r.reason);
  }
}

}  // namespace

bool serve_hls_from_owner(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex,
                          const HttpRequestInfo& info, const media::StreamKey& key,
                          const protocol::HlsObjectName& object) {
  if (!ctx.locator || !ctx.hls_fetcher) return false;
  const config::AppConfig* app = ctx.config->find_app(key.app);
  if (!app || !app->hls.enabled) return false;  // the local path answers 404
  const std::string name = key.str();
  const auto owner = ctx.locator->remote_owner(name);
  if (!owner) return false;
  const std::string what = name + " " + protocol::format_hls_object(object);

  if (!object.playlist) {
    if (const auto* hit = ctx.hls_fetcher->cached(*owner, name, object)) {
      add_owner_header(ex, owner->slot);
      reply_hls_segment(http, ex, info, hit->data, hit->max_age_s, object.form);
      return true;
    }
  }
  auto* p = new PendingHls{ctx, http, ex.hold(), info, what, owner->slot};
  p->ticket = ctx.hls_fetcher->fetch(
      *owner, key.app, key.name, object, [p, object](const workers::HlsFetchResult& r) {
        if (HttpExchange* e = p->ex.get()) {  // null: the client left (nothing to answer)
          e->on_abandoned(nullptr);
          answer(p->ctx, p->http, *e, p->info, object, r, p->what, p->owner_slot);
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
