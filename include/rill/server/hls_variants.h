#pragma once
// The multivariant playlist of a rendition group (hls.variants; docs/abr.md): GET /APP/NAME.m3u8
// where NAME has renditions (NAME_hi, NAME_lo, ... by the app's suffixes) and no HLS of its own.
//
// The renditions may be owned by different workers. Each one's entry (EXT-X-STREAM-INF with its
// CODECS, RESOLUTION, FRAME-RATE and measured BANDWIDTH) is made where its HLS lives
// (media::HlsStreamState::variant_entry): read from this worker's store, or asked from the
// worker that holds it over the worker link (the "variant" HLS object, workers/hls_fetcher.h),
// the same way as its playlist. The exchange is held until every asked worker answered or
// failed; the playlist lists the renditions that answered, in the configured order, so
// renditions appear and disappear as their publishers come and go. None: 404.
#include <string>
#include <vector>

#include "rill/http/http_exchange.h"
#include "rill/media/hls_responder.h"
#include "rill/net/worker_core.h"
#include "rill/server/hls_request.h"
#include "rill/server/http_names.h"

namespace rill::workers {
class HlsFetcher;
class StreamLocator;
}  // namespace rill::workers

namespace rill::server {

class HlsHandler;

class HlsVariants {
 public:
  // `locator` and `fetcher`: null when streams are not shared (every rendition is local).
  HlsVariants(net::WorkerCore& core, const workers::StreamLocator* locator, workers::HlsFetcher* fetcher)
      : core_(core), locator_(locator), fetcher_(fetcher) {}
  HlsVariants(const HlsVariants&) = delete;
  HlsVariants& operator=(const HlsVariants&) = delete;

  // True when `req` asks for a group's multivariant playlist and is taken care of (answered now
  // or later from the event loop). False: it is a media playlist (NAME is a rendition, NAME
  // itself has HLS, or its app has no variants) and the caller serves it as before. `local`: the
  // state this worker's store holds for req.key (the caller looked it up once), or null.
  bool serve(HlsHandler& hls, HttpExchange& ex, const HlsRequest& req, const media::HlsStreamState* local);

 private:
  struct Gather;
  // Another worker holds the HLS of key ("app/name"); false: this worker's store has it or none.
  bool held_elsewhere(const std::string& key) const;

  net::WorkerCore& core_;
  const workers::StreamLocator* locator_;
  workers::HlsFetcher* fetcher_;
};

// The answer for a group from the entries of its renditions ("" for one that has none), in
// order: the multivariant playlist, or 404 when no rendition has an entry.
media::HlsAnswer multivariant_answer(const media::StreamKey& group, const std::vector<std::string>& entries);

}  // namespace rill::server
