#pragma once
// HLS requests for a stream whose HLS another worker holds: HLS is produced once, by the owner,
// so a worker that gets such a request answers it from the owner's HlsStore, fetched over the
// owner's worker socket (workers/hls_fetcher.h): the owner's HLS responder (media/hls_responder.h)
// decides, its answer comes back typed (status, cache policy, Retry-After) and goes out as the
// owner would send it (reply_hls_answer). The holder is the live owner, or, once the publisher
// left, the worker that keeps the ended playlist (StreamLocator::hls_source). Segments come from
// the worker's segment cache when they can; otherwise the exchange is held
// (HttpExchange::hold) until the owner answers or the fetch fails (503, Retry-After: 1, after at
// most the fetch timeout). If the client leaves meanwhile (HttpHeldState::abandoned), the
// wait is cancelled and nothing touches the exchange again; the fetch itself goes on and fills
// the cache.
#include "rill/http/http_exchange.h"
#include "rill/http/http_router.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/worker_link_frame.h"
#include "rill/server/hls_request.h"
#include "rill/server/http_names.h"

namespace rill::server {

// True when another live worker holds the HLS of `key` and the request is taken care of
// (answered now, or later from the event loop). False: this worker answers it from its own store.
bool serve_hls_from_owner(net::WorkerCore& ctx, HttpExchange& ex, const HlsRequest& req);

}  // namespace rill::server
