#pragma once
// LL-HLS requests the owner of a stream may hold (RFC 8216bis): a blocking playlist reload
// (_HLS_msn / _HLS_part, §6.2.5.2), a delta update (_HLS_skip, §6.2.5.1), and a request for the
// part the playlist's EXT-X-PRELOAD-HINT names (§4.4.5.3). A held request (HttpExchange::hold)
// is parked in the worker's HlsStore (a callback and a timer; the event loop runs on) and
// answered when the segmenter gets there; its client going away (on_abandoned) cancels it.
//
//   - _HLS_msn more than two segments past the playlist's last one: 400 at once;
//   - not there after three target durations: 503 (Retry-After: 1);
//   - a blocking response is cacheable (its URL names what it waited for).
#include <cstdint>

#include "rill/media/hls_store.h"
#include "rill/net/server_context.h"
#include "rill/protocol/hls_delivery.h"
#include "rill/server/http_exchange.h"
#include "rill/server/http_router.h"

namespace rill::server {

class HttpServer;

// Answers (now or later) a playlist request of a low-latency stream that carries directives.
void serve_hls_directed_playlist(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex,
                                 const HttpRequestInfo& info, const media::HlsStreamState& st,
                                 const protocol::HlsDeliveryDirectives& d);

// Holds a request for part-INDEX.m4s when INDEX is the part being produced (the preload hint);
// false (nothing done) for any other missing part.
bool hold_hls_hinted_part(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex,
                          const HttpRequestInfo& info, const media::HlsStreamState& st, uint64_t index);

}  // namespace rill::server
