#include "rill/server/hls_handler.h"

#include <cstdlib>
#include <string>
#include <string_view>

#include "rill/media/hls_store.h"
#include "rill/protocol/error.h"
#include "rill/protocol/hls_uri_query.h"
#include "rill/protocol/stream_token.h"
#include "rill/server/hls_blocking.h"
#include "rill/server/hls_remote.h"
#include "rill/server/http_admission.h"
#include "rill/server/http_server.h"
#include "rill/workers/worker_monitor.h"

namespace rill::server {

namespace {

// A live playlist changes every segment: a cache may keep it at most half a target duration
// (RFC 8216 §6.2.1 reload rules), so a proxy such as nginx proxy_cache absorbs the reloads of
// many clients (docs/cluster.md). Under 2 s of target duration that rounds to no caching.
std::string live_playlist_cache_control(const BufferRef& text) {
  const std::string_view body(reinterpret_cast<const char*>(text.data()), text.size());
  const size_t at = body.find("#EXT-X-TARGETDURATION:");
  const int target =
      at == std::string_view::npos ? 0 : std::atoi(std::string(body.substr(at + 22, 8)).c_str());
  return target >= 2 ? "max-age=" + std::to_string(target / 2) : std::string("no-cache");
}

// The bytes of an HLS answer, for the control plane's counters (the key from the request's path).
void note_hls_bytes(HttpServer& http, const HttpRequestInfo& info, size_t bytes) {
  workers::WorkerMonitor* mon = http.context().monitor;
  if (!mon || bytes == 0) return;
  const StreamPath sp = parse_stream_path(info.path);
  if (sp.kind != StreamRoute::None) mon->hls_sent(sp.key.str(), bytes);
}

// cache_control null: the live-playlist rule above; LL-HLS passes its own (hls_blocking.cpp).
void reply_hls_playlist_text(HttpServer& http, HttpExchange& ex, const HttpRequestInfo& info,
                             const BufferRef& text, const char* cache_control) {
  ex.add_header("Content-Type", "application/vnd.apple.mpegurl");  // RFC 8216 §4
  ex.add_header("Cache-Control",
                cache_control ? std::string(cache_control) : live_playlist_cache_control(text));
  http.add_cors_headers(ex);
  const size_t bytes = ex.reply(200, text);
  note_hls_bytes(http, info, bytes);
  http.log_access(info, 200, bytes);
}

// Looks up the stream's HLS state; answers 404 itself (and returns null) when there is none.
const media::HlsStreamState* find_or_404(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex,
                                         const HttpRequestInfo& info, const media::StreamKey& key) {
  auto not_found = [&](const std::string& why) -> const media::HlsStreamState* {
    http.reply_error(ex, info, 404, why);
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
void note_hls_viewer(net::ServerContext& ctx, const HttpExchange& ex, const HttpRequestInfo& info,
                     const media::StreamKey& key) {
  if (!ctx.monitor || info.method == HttpMethod::Head) return;
  const std::string* ua = ex.header("User-Agent");
  const std::string_view peer = info.peer;
  const std::string_view addr = peer.substr(0, peer.rfind(':'));  // npos: all of it
  const config::AppConfig* app = ctx.config->find_app(key.app);
  const auto target = app ? std::chrono::duration_cast<std::chrono::milliseconds>(app->hls.fragment)
                          : std::chrono::milliseconds(2000);
  ctx.monitor->hls_requested(key.str(), addr, ua ? std::string_view(*ua) : std::string_view(), target);
}

}  // namespace

void reply_hls_playlist(HttpServer& http, HttpExchange& ex, const HttpRequestInfo& info,
                        const BufferRef& text, const char* cache_control) {
  // A token the playlist was fetched with goes on to its segment URIs (docs/security.md), so the
  // player's segment requests pass the same check. Without one, the shared text goes out as is.
  const std::string token = protocol::token_part_of(info.query);
  if (!token.empty()) {
    const std::string_view plain(reinterpret_cast<const char*>(text.data()), text.size());
    return reply_hls_playlist_text(http, ex, info,
                                   SharedBuffer::copy_of(protocol::playlist_with_uri_query(plain, token)),
                                   cache_control);
  }
  reply_hls_playlist_text(http, ex, info, text, cache_control);
}

void reply_hls_segment(HttpServer& http, HttpExchange& ex, const HttpRequestInfo& info, const BufferRef& data,
                       uint32_t max_age_s, protocol::HlsSegmentForm form) {
  ex.add_header("Content-Type", protocol::hls_content_type(form));
  // The bytes behind a segment URI never change while the state lives (and the state outlives
  // any cache: see HlsStore::grace_ms), so clients and proxies may keep it.
  ex.add_header("Cache-Control", "max-age=" + std::to_string(max_age_s) + ", immutable");
  http.add_cors_headers(ex);
  const size_t bytes = ex.reply(200, data);
  note_hls_bytes(http, info, bytes);
  http.log_access(info, 200, bytes);
}

void serve_hls_playlist(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex,
                        const HttpRequestInfo& info, const StreamPath& route) {
  // LL-HLS delivery directives (RFC 8216bis §6.2.5) of a low-latency app; a malformed one is 400.
  protocol::HlsDeliveryDirectives d;
  const config::AppConfig* app = ctx.config->find_app(route.key.app);
  if (app && app->hls.low_latency) {
    try {
      d = protocol::parse_hls_delivery_directives(info.query);
    } catch (const protocol::ProtocolError& e) {
      http.reply_error(ex, info, 400, std::string("LL-HLS delivery directives: ") + e.what());
      return;
    }
  }
  protocol::HlsObjectName object;
  object.directives = protocol::format_hls_delivery_directives(d);
  if (serve_hls_from_owner(ctx, http, ex, info, route.key, object)) return;
  const media::HlsStreamState* st = find_or_404(ctx, http, ex, info, route.key);
  if (!st) return;
  if (!st->has_segments()) {
    // Published, but the first segment is not finished yet: a player retries.
    http.reply_error(ex, info, 404, "stream " + route.key.str() + " has no HLS segment yet");
    return;
  }
  if (st->low_latency()) {
    serve_hls_directed_playlist(ctx, http, ex, info, *st, d);
    return;
  }
  reply_hls_playlist(http, ex, info, st->playlist_text());
}

void serve_hls_segment(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex,
                       const HttpRequestInfo& info, const StreamPath& route) {
  if (serve_hls_from_owner(ctx, http, ex, info, route.key,
                           protocol::HlsObjectName{false, route.segment, route.form}))
    return;
  const media::HlsStreamState* st = find_or_404(ctx, http, ex, info, route.key);
  if (!st) return;
  const BufferRef* data = st->file(route.form, route.segment);
  if (!data && route.form == protocol::HlsSegmentForm::Part &&
      hold_hls_hinted_part(ctx, http, ex, info, *st, route.segment)) {
    return;  // answered when the part is complete
  }
  if (!data) {
    http.reply_error(ex, info, 404,
                     protocol::hls_segment_file(route.form, route.segment) + " of " + route.key.str() +
                         " is not available (expired, not produced, or not this stream's container)");
    return;
  }
  reply_hls_segment(http, ex, info, *data, st->segment_max_age_s(), route.form);
}

void install_hls_handlers(HttpServer& http, net::ServerContext& ctx) {
  // Playlists and segments alike ask the gate first (a token in the query reaches both).
  auto admitted = [&http, &ctx](auto serve) {
    return [&http, &ctx, serve](HttpExchange& ex, const HttpRequestInfo& info, const StreamPath& route) {
      admit_http_play(ctx, http, ex, info, GateProto::Hls, route.key,
                      [&http, &ctx, serve, route = StreamPath(route)](
                          HttpExchange& e, const HttpRequestInfo& i, GateDecision d) mutable {
                        // Called once: the route is the closure's own to change.
                        if (!d.key.name.empty()) route.key = std::move(d.key);  // a callback may redirect
                        note_hls_viewer(ctx, e, i, route.key);
                        serve(ctx, http, e, i, route);
                      });
    };
  };
  http.set_stream_handler(StreamRoute::HlsPlaylist, admitted(&serve_hls_playlist));
  http.set_stream_handler(StreamRoute::HlsSegment, admitted(&serve_hls_segment));
}

}  // namespace rill::server
