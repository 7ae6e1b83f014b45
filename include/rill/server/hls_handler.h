#pragma once
// HLS over HTTP: serves the worker's HlsStore (media/hls_store.h).
//
//   GET|HEAD /APP/STREAM.m3u8    application/vnd.apple.mpegurl (RFC 8216 §4), Cache-Control: no-cache
//   GET|HEAD /APP/STREAM/SEQ.ts  video/mp2t, Content-Length, Cache-Control: max-age=N
//                                (N >= the playlist duration: a segment never changes once listed)
//   GET|HEAD /APP/STREAM/SEQ.m4s, init-ID.mp4, part-N.m4s   the same as video/mp4 (container: fmp4;
//                                parts with low_latency)
//
// A low-latency stream's playlist takes the LL-HLS delivery directives, and its hinted part is
// held until complete (hls_blocking.h).
//
// 404 for an unknown app, an app without HLS, a stream with no playlist (yet, or any more), and a
// segment that expired or never existed. Segment bodies are queued on the connection by reference
// (the store's shared buffer behind a small response head): serving one segment to 1000 clients
// copies nothing. CORS headers as for every stream response.
//
// A stream owned by another worker is answered from the owner's store (server/hls_remote.h):
// same bytes, same headers.
#include <cstdint>

#include "rill/core/buffer.h"
#include "rill/net/server_context.h"
#include "rill/server/http_exchange.h"
#include "rill/server/http_router.h"

namespace rill::server {

class HttpServer;

// Registers the HlsPlaylist and HlsSegment stream handlers on `http`. Both references must outlive it.
void install_hls_handlers(HttpServer& http, net::ServerContext& ctx);

// The handlers themselves (also usable directly).
void serve_hls_playlist(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex,
                        const HttpRequestInfo& info, const StreamPath& route);
void serve_hls_segment(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex,
                       const HttpRequestInfo& info, const StreamPath& route);

// The 200 replies, shared by the local and the cross-worker path (a 404 is HttpServer::reply_error).
void reply_hls_playlist(HttpServer& http, HttpExchange& ex, const HttpRequestInfo& info,
                        const BufferRef& text,
                        const char* cache_control = nullptr);  // null: live playlist max-age
void reply_hls_segment(HttpServer& http, HttpExchange& ex, const HttpRequestInfo& info, const BufferRef& data,
                       uint32_t max_age_s, protocol::HlsSegmentForm form);

}  // namespace rill::server
