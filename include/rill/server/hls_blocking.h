#pragma once
// HLS requests the HLS responder holds (media/hls_responder.h, media::HlsHold): an LL-HLS
// blocking playlist reload (_HLS_msn / _HLS_part, RFC 8216bis §6.2.5.2) and a request for the
// part the playlist's EXT-X-PRELOAD-HINT names (§4.4.5.3). A held request
// (HttpExchange::hold) is parked in the worker's HlsStore (a callback and a timer; the event
// loop runs on) and answered with the responder's verdict (media::respond_hls_held) when the
// segmenter gets there, the wait times out (503, Retry-After: 1, after three target durations)
// or the stream ends; its client going away (HttpHeldState::abandoned) cancels it.
#include "rill/http/http_exchange.h"
#include "rill/http/http_router.h"
#include "rill/media/hls_responder.h"
#include "rill/server/hls_request.h"
#include "rill/server/http_names.h"

namespace rill::server {

class HlsHandler;

// Parks the request until `hold` is over, then answers it (server/hls_handler.h, HlsHandler::reply).
void hold_hls_request(HlsHandler& hls, HttpExchange& ex, const HlsRequest& req, const media::HlsHold& hold);

}  // namespace rill::server
