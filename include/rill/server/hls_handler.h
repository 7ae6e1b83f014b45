#pragma once
// HLS over HTTP: serves the worker's HlsStore (media/hls_store.h).
//
//   GET|HEAD /APP/STREAM.m3u8    application/vnd.apple.mpegurl (RFC 8216 §4)
//   GET|HEAD /APP/STREAM/SEQ.ts  video/mp2t, Content-Length, Cache-Control: max-age=N, immutable
//                                (N >= the playlist duration: a segment never changes once listed)
//   GET|HEAD /APP/STREAM/SEQ.m4s, init-ID.mp4, part-N.m4s   the same as video/mp4 (container: fmp4;
//                                parts with low_latency)
//
// What a request gets — status, body, cache policy, or a hold until the stream gets there — is
// the HLS responder's decision (media/hls_responder.h), the same on every worker; this file
// turns it into HTTP (HlsHandler::reply, the one place a cache policy becomes Cache-Control).
// A held request (an LL-HLS blocking reload, the preload-hinted part) waits in the store
// (server/hls_blocking.h).
//
// 404 for an unknown app, an app without HLS, a stream with no playlist (yet, or any more), and a
// segment that expired or never existed. Segment bodies are queued on the connection by reference
// (the store's shared buffer behind a small response head): serving one segment to 1000 clients
// copies nothing. CORS headers as for every stream response.
//
// NAME.m3u8 of a rendition group (hls.variants) is its multivariant playlist
// (server/hls_variants.h).
//
// A stream whose HLS another worker holds is answered from that worker's store
// (server/hls_remote.h): the same responder's answer, the same bytes, the same headers.
#include <cstdint>

#include "rill/core/buffer.h"
#include "rill/http/http_exchange.h"
#include "rill/http/http_router.h"
#include "rill/media/hls_responder.h"
#include "rill/net/worker_core.h"
#include "rill/server/hls_request.h"
#include "rill/server/http_names.h"
#include "rill/server/stream_routes.h"

namespace rill::workers {
class WorkerMonitor;
}

namespace rill::server {

class HlsRemote;
class HlsVariants;
class StreamGate;

// The HLS stream handlers of one worker, built by server::Worker with what they use: the gate
// every request asks, the monitor that counts HLS viewers and bytes (null: none), and the remote
// that answers streams another worker holds (null: streams are not shared). All of them outlive
// the handler, and the handler outlives the HTTP server's held requests.
class HlsHandler {
 public:
  HlsHandler(net::WorkerCore& core, StreamGate& gate, workers::WorkerMonitor* monitor, HlsRemote* remote,
             HlsVariants* variants)
      : core_(core), gate_(gate), monitor_(monitor), remote_(remote), variants_(variants) {}
  HlsHandler(const HlsHandler&) = delete;
  HlsHandler& operator=(const HlsHandler&) = delete;

  // Registers the HlsPlaylist and HlsSegment stream handlers on `routes`, which it outlives.
  void install(StreamRoutes& routes);

  // The handlers themselves (also usable directly), once admitted: `app` is the gate's (resolved
  // once per request, null for an unknown app). The route is taken: its key moves on into the
  // request (not copied once more per request).
  void serve_playlist(HttpExchange& ex, StreamPath&& route, const config::AppConfig* app);
  void serve_segment(HttpExchange& ex, StreamPath&& route, const config::AppConfig* app);

  // Answers the request from this worker's own store: the responder's answer, or a hold.
  void serve_locally(HttpExchange& ex, const HlsRequest& req);
  // The same with req.key's state already looked up (null: none).
  void serve_locally(HttpExchange& ex, const HlsRequest& req, const media::HlsStreamState* state);

  // The HTTP reply of an HLS answer, whichever worker's responder made it: status, Content-Type,
  // Cache-Control (protocol::hls_cache_control), Retry-After, CORS; a playlist fetched with a
  // token gets it on its URIs.
  void reply(HttpExchange& ex, const HlsRequest& req, const media::HlsAnswer& answer);

  net::WorkerCore& core() { return core_; }

 private:
  void note_viewer(const HttpExchange& ex, const media::StreamKey& key, const config::AppConfig* app);

  net::WorkerCore& core_;
  StreamGate& gate_;
  workers::WorkerMonitor* monitor_;
  HlsRemote* remote_;
  HlsVariants* variants_;  // group multivariant playlists (server/hls_variants.h)
};

}  // namespace rill::server
