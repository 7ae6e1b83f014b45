#include "rill/server/hls_handler.h"

#include <event2/http.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "rill/media/hls_store.h"
#include "rill/protocol/hls_uri_query.h"
#include "rill/protocol/stream_token.h"
#include "rill/server/hls_remote.h"
#include "rill/server/http_admission.h"
#include "rill/server/http_server.h"
#include "rill/workers/worker_monitor.h"

namespace rill::server {

namespace {

void reply_hls_playlist_text(HttpServer& http, evhttp_request* req, const HttpRequestInfo& info, const BufferRef& text) {
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", "application/vnd.apple.mpegurl");  // RFC 8216 §4
  // A live playlist changes every segment: a cache may keep it at most half a target duration
  // (RFC 8216 §6.2.1 reload rules), so a proxy such as nginx proxy_cache absorbs the reloads of
  // many clients (docs/cluster.md). Under 2 s of target duration that rounds to no caching.
  const std::string_view body(reinterpret_cast<const char*>(text.data()), text.size());
  const size_t at = body.find("#EXT-X-TARGETDURATION:");
  const int target = at == std::string_view::npos ? 0 : std::atoi(std::string(body.substr(at + 22, 8)).c_str());
  const std::string playlist_cc = target >= 2 ? "max-age=" + std::to_string(target / 2) : std::string("no-cache");
  evhttp_add_header(h, "Cache-Control", playlist_cc.c_str());
  http.add_cors_headers(req);
  http.log_access(info, 200, http.reply(req, 200, text));
}

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
  ctx.monitor->hls_served(key.str(), addr, ua ? ua : "", 0, target);
}

}  // namespace

void reply_hls_playlist(HttpServer& http, evhttp_request* req, const HttpRequestInfo& info, const BufferRef& text) {
  // A token the playlist was fetched with goes on to its segment URIs (docs/security.md), so the
  // player's segment requests pass the same check. Without one, the shared text goes out as is.
  const std::string token = protocol::token_part_of(info.query);
  if (!token.empty()) {
    const std::string_view plain(reinterpret_cast<const char*>(text.data()), text.size());
    return reply_hls_playlist_text(http, req, info, SharedBuffer::copy_of(protocol::playlist_with_uri_query(plain, token)));
  }
  reply_hls_playlist_text(http, req, info, text);
}

void reply_hls_segment(HttpServer& http, evhttp_request* req, const HttpRequestInfo& info, const BufferRef& data,
                       uint32_t max_age_s) {
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", "video/mp2t");
  // The bytes behind a segment URI never change while the state lives (and the state outlives
  // any cache: see HlsStore::grace_ms), so clients and proxies may keep it.
  const std::string cc = "max-age=" + std::to_string(max_age_s) + ", immutable";
  evhttp_add_header(h, "Cache-Control", cc.c_str());
  http.add_cors_headers(req);
  http.log_access(info, 200, http.reply(req, 200, data));
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
                      [&http, &ctx, serve, route](evhttp_request* r, const HttpRequestInfo& i, GateDecision d) {
                        StreamPath decided = route;
                        if (!d.key.name.empty()) decided.key = d.key;  // a callback may redirect
                        note_hls_viewer(ctx, r, i, decided.key);
                        serve(ctx, http, r, i, decided);
                      });
    };
  };
  http.set_stream_handler(StreamRoute::HlsPlaylist, admitted(&serve_hls_playlist));
  http.set_stream_handler(StreamRoute::HlsSegment, admitted(&serve_hls_segment));
}

}  // namespace rill::server
