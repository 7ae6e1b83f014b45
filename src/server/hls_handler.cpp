#include "rill/server/hls_handler.h"

#include <event2/http.h>

#include <string>

#include "rill/media/hls_store.h"
#include "rill/server/hls_remote.h"
#include "rill/server/http_admission.h"
#include "rill/server/http_server.h"
#include "rill/workers/worker_monitor.h"

namespace rill::server {

namespace {

// Looks up the stream's HLS state; answers 404 itself (and returns null) when there is none.
const media::HlsStreamState* find_or_404(net::ServerContext& ctx, HttpServer& http, evhttp_request* req,
                                         const HttpRequestInfo& info, const media::StreamKey& key) {
  auto not_found = [&](const std::string& why) -> const media::HlsStreamState* {
    http.reply_error(req, info, 404, why);
    return nullptr;
  };
  const config::AppConfig* app = ctx.config->find_app(key.app);
  if (!app) return not_found("unknown app " + key.app);
  if (!app->hls.enabled) return not_found("HLS is not enabled for app " + key.app);
  const media::HlsStreamState* st = ctx.streams->hls().find(key.app, key.name);
  if (!st) return not_found("stream " + key.str() + " has no HLS playlist");
  return st;
}

// The control plane counts HLS viewers by (address, User-Agent) (workers/worker_monitor.h).
void note_hls_viewer(net::ServerContext& ctx, evhttp_request* req, const HttpRequestInfo& info,
                     const media::StreamKey& key) {
  if (!ctx.monitor || info.method == HttpMethod::Head) return;
  const char* ua = evhttp_find_header(evhttp_request_get_input_headers(req), "User-Agent");
  const size_t colon = info.peer.rfind(':');
  const std::string addr = colon == std::string::npos ? info.peer : info.peer.substr(0, colon);
  const config::AppConfig* app = ctx.config->find_app(key.app);
  const auto target = app ? std::chrono::duration_cast<std::chrono::milliseconds>(app->hls.fragment)
                          : std::chrono::milliseconds(2000);
  ctx.monitor->hls_requested(key.str(), addr, ua ? ua : "", target);
}

// The bytes of an HLS answer, for the control plane's counters (the key from the request's path).
void note_hls_bytes(HttpServer& http, const HttpRequestInfo& info, size_t bytes) {
  workers::WorkerMonitor* mon = http.context().monitor;
  if (!mon || bytes == 0) return;
  const StreamPath sp = parse_stream_path(info.path);
  if (sp.kind != StreamRoute::None) mon->hls_sent(sp.key.str(), bytes);
}

}  // namespace

void reply_hls_playlist(HttpServer& http, evhttp_request* req, const HttpRequestInfo& info, const BufferRef& text) {
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", "application/vnd.apple.mpegurl");  // RFC 8216 §4
  evhttp_add_header(h, "Cache-Control", "no-cache");  // a live playlist changes every segment
  http.add_cors_headers(req);
  const size_t bytes = http.reply(req, 200, text);
  note_hls_bytes(http, info, bytes);
  http.log_access(info, 200, bytes);
}

void reply_hls_segment(HttpServer& http, evhttp_request* req, const HttpRequestInfo& info, const BufferRef& data,
                       uint32_t max_age_s) {
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", "video/mp2t");
  // The bytes behind a segment URI never change while the state lives (and the state outlives
  // any cache: see HlsStore::grace_ms), so clients and proxies may keep it.
  const std::string cc = "max-age=" + std::to_string(max_age_s);
  evhttp_add_header(h, "Cache-Control", cc.c_str());
  http.add_cors_headers(req);
  const size_t bytes = http.reply(req, 200, data);
  note_hls_bytes(http, info, bytes);
  http.log_access(info, 200, bytes);
}

void serve_hls_playlist(net::ServerContext& ctx, HttpServer& http, evhttp_request* req, const HttpRequestInfo& info,
                        const StreamPath& route) {
  if (serve_hls_from_owner(ctx, http, req, info, route.key, protocol::HlsObjectName{true, 0})) return;
  const media::HlsStreamState* st = find_or_404(ctx, http, req, info, route.key);
  if (!st) return;
  if (!st->has_segments()) {
    // Published, but the first segment is not finished yet: a player retries.
    http.reply_error(req, info, 404, "stream " + route.key.str() + " has no HLS segment yet");
    return;
  }
  reply_hls_playlist(http, req, info, st->playlist_text());
}

void serve_hls_segment(net::ServerContext& ctx, HttpServer& http, evhttp_request* req, const HttpRequestInfo& info,
                       const StreamPath& route) {
  if (serve_hls_from_owner(ctx, http, req, info, route.key, protocol::HlsObjectName{false, route.segment})) return;
  const media::HlsStreamState* st = find_or_404(ctx, http, req, info, route.key);
  if (!st) return;
  const media::HlsSegment* seg = st->segment(route.segment);
  if (!seg) {
    http.reply_error(req, info, 404,
                     "segment " + std::to_string(route.segment) + " of " + route.key.str() +
                         " is not available (expired or not produced)");
    return;
  }
  reply_hls_segment(http, req, info, seg->data, st->segment_max_age_s());
}

void install_hls_handlers(HttpServer& http, net::ServerContext& ctx) {
  // Playlists and segments alike ask the gate first (a token in the query reaches both).
  auto admitted = [&http, &ctx](auto serve) {
    return [&http, &ctx, serve](evhttp_request* req, const HttpRequestInfo& info, const StreamPath& route) {
      admit_http_play(ctx, http, req, info, GateProto::Hls, route.key,
                      [&http, &ctx, serve, route](evhttp_request* r, const HttpRequestInfo& i, GateDecision) {
                        note_hls_viewer(ctx, r, i, route.key);
                        serve(ctx, http, r, i, route);
                      });
    };
  };
  http.set_stream_handler(StreamRoute::HlsPlaylist, admitted(&serve_hls_playlist));
  http.set_stream_handler(StreamRoute::HlsSegment, admitted(&serve_hls_segment));
}

}  // namespace rill::server
