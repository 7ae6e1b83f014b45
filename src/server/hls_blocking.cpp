#include "rill/server/hls_blocking.h"

#include "rill/http/http_server.h"
#include "rill/server/hls_handler.h"

namespace rill::server {

namespace {

// One held request, owned by its exchange (HttpHeldState) until answered or abandoned.
struct HeldHls final : HttpHeldState {
  HeldHls(HlsHandler& h, HlsRequest r) : hls(h), req(std::move(r)) {}
  void abandoned(const HttpExchange&) override { hls.core().streams->hls().cancel_wait(wait_id); }

  HlsHandler& hls;
  HttpHeld ex;
  HlsRequest req;
  uint64_t wait_id = 0;
};

void answer(HeldHls& h, bool reached) {
  HttpExchange* ex = h.ex.get();
  if (!ex) return;  // the client left (its abandonment cancelled the wait: not expected)
  const HlsRequest& r = h.req;
  h.hls.reply(*ex, r,
              media::respond_hls_held(h.hls.core().streams->hls().find(r.key), r.key, r.object, reached));
}

}  // namespace

void hold_hls_request(HlsHandler& hls, HttpExchange& ex, const HlsRequest& req, const media::HlsHold& hold) {
  auto owned = std::make_unique<HeldHls>(hls, req);
  HeldHls& h = *owned;
  h.ex = ex.hold(std::move(owned));
  h.wait_id =
      hls.core().streams->hls().wait(req.key, hold.target, hold.timeout_ms, [&h](bool ok) { answer(h, ok); });
}

}  // namespace rill::server
