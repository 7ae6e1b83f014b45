#include "rill/server/hls_blocking.h"

#include "rill/server/hls_handler.h"
#include "rill/server/http_server.h"

namespace rill::server {

namespace {

// One held request. Deleted when answered or when its client goes away, whichever comes first.
struct HeldHls {
  net::ServerContext& ctx;
  HttpServer& http;
  HttpHeld ex;
  HttpRequestInfo info;
  media::StreamKey key;
  protocol::HlsObjectName object;
  uint64_t wait_id = 0;
};

void answer(HeldHls* h, bool reached) {
  HttpExchange* ex = h->ex.get();
  if (!ex) {  // the client left (its abandoned callback would have cancelled the wait)
    delete h;
    return;
  }
  ex->on_abandoned(nullptr);
  reply_hls_answer(h->http, *ex, h->info, h->object,
                   media::respond_hls_held(h->ctx.streams->hls().find(h->key), h->key, h->object, reached));
  delete h;
}

}  // namespace

void hold_hls_request(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex,
                      const HttpRequestInfo& info, const media::StreamKey& key,
                      const protocol::HlsObjectName& object, const media::HlsHold& hold) {
  auto* h = new HeldHls{ctx, http, {}, info, key, object};
  h->wait_id = ctx.streams->hls().wait(key, hold.target, hold.timeout_ms, [h](bool ok) { answer(h, ok); });
  h->ex = ex.hold();
  ex.on_abandoned([h] {
    h->ctx.streams->hls().cancel_wait(h->wait_id);
    delete h;
  });
}

}  // namespace rill::server
