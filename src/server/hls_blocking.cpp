#include "rill/server/hls_blocking.h"

#include "rill/http/http_server.h"
#include "rill/server/hls_handler.h"

namespace rill::server {

namespace {

// One held request. Deleted when answered or when its client goes away, whichever comes first.
struct HeldHls {
  net::WorkerCore& ctx;
  HttpServer& http;
  HttpHeld ex;
  HttpRequestInfo info;
  HlsRequest req;
  uint64_t wait_id = 0;
};

void answer(HeldHls* h, bool reached) {
  HttpExchange* ex = h->ex.get();
  if (!ex) {  // the client left (its abandoned callback would have cancelled the wait)
    delete h;
    return;
  }
  ex->on_abandoned(nullptr);
  const HlsRequest& r = h->req;
  reply_hls_answer(h->http, *ex, h->info, r,
                   media::respond_hls_held(h->ctx.streams->hls().find(r.key), r.key, r.object, reached));
  delete h;
}

}  // namespace

void hold_hls_request(net::WorkerCore& ctx, HttpServer& http, HttpExchange& ex,
                      const HttpRequestInfo& info, const HlsRequest& req, const media::HlsHold& hold) {
  auto* h = new HeldHls{ctx, http, {}, info, req};
  h->wait_id = ctx.streams->hls().wait(req.key, hold.target, hold.timeout_ms, [h](bool ok) { answer(h, ok); });
  h->ex = ex.hold();
  ex.on_abandoned([h] {
    h->ctx.streams->hls().cancel_wait(h->wait_id);
    delete h;
  });
}

}  // namespace rill::server
