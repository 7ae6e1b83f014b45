#include "rill/server/hls_handler.h"

#include <string>
#include <string_view>
#include <variant>

#include "rill/http/http_server.h"
#include "rill/media/hls_store.h"
#include "rill/protocol/error.h"
#include "rill/protocol/hls_uri_query.h"
#include "rill/protocol/stream_token.h"
#include "rill/server/hls_blocking.h"
#include "rill/server/hls_remote.h"
#include "rill/server/hls_variants.h"
#include "rill/server/http_admission.h"
#include "rill/workers/worker_monitor.h"

namespace rill::server {

// The control plane counts HLS viewers by (address, User-Agent) (workers/worker_monitor.h).
void HlsHandler::note_viewer(const HttpExchange& ex, const media::StreamKey& key,
                             const config::AppConfig* app) {
  const HttpRequestInfo& info = ex.info();
  if (!monitor_ || info.method == HttpMethod::Head) return;
  const std::string_view* ua = ex.header("User-Agent");
  const std::string_view peer = info.peer;
  const std::string_view addr = peer.substr(0, peer.rfind(':'));  // npos: all of it
  const auto target = app ? std::chrono::duration_cast<std::chrono::milliseconds>(app->hls.fragment)
                          : std::chrono::milliseconds(2000);
  monitor_->hls_requested(key.str(), addr, ua ? std::string_view(*ua) : std::string_view(), target);
}

void HlsHandler::reply(HttpExchange& ex, const HlsRequest& req, const media::HlsAnswer& answer) {
  const protocol::HlsObjectName& object = req.object;
  if (!answer.ok()) {
    if (answer.head.retry_after_s) ex.add_header("Retry-After", std::to_string(answer.head.retry_after_s));
    return ex.reply_error(answer.head.status, answer.reason);
  }
  BufferRef body = answer.body;
  // A token the playlist was fetched with goes on to its segment URIs (docs/security.md), so the
  // player's segment requests pass the same check. Without one, the shared text goes out as is.
  if (object.playlist) {
    if (const std::string token = protocol::token_part_of(ex.info().query); !token.empty()) {
      const std::string_view plain(reinterpret_cast<const char*>(body.data()), body.size());
      body = SharedBuffer::copy_of(protocol::playlist_with_uri_query(plain, token));
    }
  }
  ex.add_header("Content-Type", media::hls_object_content_type(object));
  ex.add_header("Cache-Control", protocol::hls_cache_control(answer.head.cache));
  ex.add_cors_headers();
  const size_t bytes = ex.reply(200, body);  // the exchange may be gone once answered
  if (monitor_ && bytes != 0) monitor_->hls_sent(req.key.str(), bytes);  // the control plane's counters
}

void HlsHandler::serve_locally(HttpExchange& ex, const HlsRequest& req) {
  serve_locally(ex, req, core_.streams->hls().find(req.key));
}

void HlsHandler::serve_locally(HttpExchange& ex, const HlsRequest& req, const media::HlsStreamState* state) {
  if (!req.app) return ex.reply_error(404, "unknown app " + req.key.app);
  if (!req.app->hls.enabled) return ex.reply_error(404, "HLS is not enabled for app " + req.key.app);
  media::HlsResponse r = media::respond_hls(state, req.key, req.object);
  if (const auto* hold = std::get_if<media::HlsHold>(&r)) {
    return hold_hls_request(*this, ex, req, *hold);  // answered when it ends
  }
  reply(ex, req, std::get<media::HlsAnswer>(r));
}

void HlsHandler::serve_playlist(HttpExchange& ex, StreamPath&& route, const config::AppConfig* app) {
  // LL-HLS delivery directives (RFC 8216bis §6.2.5) of a low-latency app; a malformed one is 400.
  protocol::HlsDeliveryDirectives d;
  if (app && app->hls.low_latency) {
    try {
      d = protocol::parse_hls_delivery_directives(ex.info().query);
    } catch (const protocol::ProtocolError& e) {
      ex.reply_error(400, std::string("LL-HLS delivery directives: ") + e.what());
      return;
    }
  }
  HlsRequest req{std::move(route.key), app, {}};
  req.object.directives = protocol::format_hls_delivery_directives(d);
  // One lookup in this worker's store for the whole request (nothing changes it meanwhile).
  const media::HlsStreamState* local = core_.streams->hls().find(req.key);
  if (variants_ && variants_->serve(*this, ex, req, local)) return;
  if (remote_ && remote_->serve(*this, ex, req)) return;
  serve_locally(ex, req, local);
}

void HlsHandler::serve_segment(HttpExchange& ex, StreamPath&& route, const config::AppConfig* app) {
  const HlsRequest req{std::move(route.key), app, protocol::HlsObjectName{false, route.segment, route.form}};
  if (remote_ && remote_->serve(*this, ex, req)) return;
  serve_locally(ex, req);
}

void HlsHandler::install(StreamRoutes& routes) {
  // Playlists and segments alike ask the gate first (a token in the query reaches both).
  using Serve = void (HlsHandler::*)(HttpExchange&, StreamPath&&, const config::AppConfig*);
  auto admitted = [this](Serve serve) {
    return [this, serve](HttpExchange& ex, const StreamPath& route) {
      // The closure keeps the route but its key: the gate's decision brings the key (the asked
      // one, or the one a callback redirected to), so the name is not copied once more.
      admit_http_play(core_, gate_, ex, GateProto::Hls, route.key,
                      [this, serve, kind = route.kind, segment = route.segment, form = route.form](
                          HttpExchange& e, GateDecision d) {
                        StreamPath decided{kind, std::move(d.key), segment, form, false, {}};
                        note_viewer(e, decided.key, d.app);
                        (this->*serve)(e, std::move(decided), d.app);
                      });
    };
  };
  routes.set(StreamRoute::HlsPlaylist, admitted(&HlsHandler::serve_playlist));
  routes.set(StreamRoute::HlsSegment, admitted(&HlsHandler::serve_segment));
}

}  // namespace rill::server
