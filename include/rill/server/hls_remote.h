#pragma once
// HLS requests for a stream whose HLS another worker holds: HLS is produced once, by the owner,
// so a worker that gets such a request answers it from the owner's HlsStore, fetched over the
// owner's worker socket (workers/hls_fetcher.h): the owner's HLS responder (media/hls_responder.h)
// decides, its answer comes back typed (status, cache policy, Retry-After) and goes out as the
// owner would send it (HlsHandler::reply). The holder is the live owner, or, once the publisher
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

namespace rill::workers {
class HlsFetcher;
class StreamLocator;
}  // namespace rill::workers

namespace rill::server {

class HlsHandler;

class HlsRemote {
 public:
  // `locator` says which worker holds a stream's HLS; `fetcher` asks it. Both outlive the held
  // requests (server::Worker builds them first).
  HlsRemote(net::WorkerCore& core, workers::StreamLocator& locator, workers::HlsFetcher& fetcher)
      : core_(core), locator_(locator), fetcher_(fetcher) {}
  HlsRemote(const HlsRemote&) = delete;
  HlsRemote& operator=(const HlsRemote&) = delete;

  // True when another live worker holds the HLS of the request's stream and the request is taken
  // care of (answered through `hls` now, or later from the event loop). False: this worker
  // answers it from its own store.
  bool serve(HlsHandler& hls, HttpExchange& ex, const HlsRequest& req);

 private:
  struct Pending;

  net::WorkerCore& core_;
  workers::StreamLocator& locator_;
  workers::HlsFetcher& fetcher_;
};

}  // namespace rill::server
