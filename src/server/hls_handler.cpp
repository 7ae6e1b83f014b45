#include "rill/server/hls_handler.h"

#include <event2/buffer.h>
#include <event2/http.h>

#include <string>

#include "rill/media/hls_store.h"
#include "rill/server/hls_remote.h"
#include "rill/server/http_server.h"

namespace rill::server {

namespace {

// evbuffer_add_reference cleanup: drops the reference taken for libevent.
void release_buffer(const void*, size_t, void* extra) { static_cast<SharedBuffer*>(extra)->unref(); }

bool is_head(evhttp_request* req) { return evhttp_request_get_command(req) == EVHTTP_REQ_HEAD; }

}  // namespace

// 404 with a one-line reason. evhttp 2.1 sends whatever body it is given even for HEAD, so a
// HEAD gets the headers only (RFC 9110 §9.3.2), with the length the GET would have.
void reply_hls_not_found(HttpServer& http, evhttp_request* req, const std::string& why, int64_t started) {
  if (!is_head(req)) {
    http.send_error(req, 404, "Not Found", why);
    http.log_access(req, 404, why.size() + 1, started);
    return;
  }
  http.add_cors_headers(req);
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", "text/plain; charset=utf-8");
  evhttp_add_header(h, "Cache-Control", "no-cache");
  evhttp_add_header(h, "Content-Length", std::to_string(why.size() + 1).c_str());
  evhttp_send_reply(req, 404, "Not Found", nullptr);
  http.log_access(req, 404, 0, started);
}

namespace {

// Looks up the stream's HLS state; answers 404 itself (and returns null) when there is none.
const media::HlsStreamState* find_or_404(net::ServerContext& ctx, HttpServer& http, evhttp_request* req,
                                         const HttpRoute& route, int64_t started) {
  auto not_found = [&](const std::string& why) -> const media::HlsStreamState* {
    reply_hls_not_found(http, req, why, started);
    return nullptr;
  };
  const config::AppConfig* app = ctx.config->find_app(route.app);
  if (!app) return not_found("unknown app " + route.app);
  if (!app->hls.enabled) return not_found("HLS is not enabled for app " + route.app);
  const media::HlsStreamState* st = ctx.streams->hls().find(route.app, route.stream);
  if (!st) return not_found("stream " + route.app + "/" + route.stream + " has no HLS playlist");
  return st;
}

// 200 with `body` (by reference, no copy); HEAD gets the headers only. Returns the bytes sent.
uint64_t send_buffer(evhttp_request* req, const BufferRef& body) {
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Length", std::to_string(body.size()).c_str());
  if (is_head(req)) {
    // evhttp 2.1 would send a body given for HEAD, and adds no Content-Length for HEAD itself:
    // headers only, with the length the GET would have (RFC 9110 §9.3.2).
    evhttp_send_reply(req, 200, "OK", nullptr);
    return 0;
  }
  evbuffer* b = evbuffer_new();
  if (body.size() > 0) {
    SharedBuffer* sb = body.get();
    sb->ref();  // released by libevent through release_buffer once the bytes are written
    if (evbuffer_add_reference(b, sb->data(), sb->size(), &release_buffer, sb) != 0) {
      sb->unref();  // libevent 2.1 does not call the cleanup when it fails (out of memory)
      evbuffer_free(b);
      evhttp_send_error(req, 500, "Internal Server Error");
      return 0;
    }
  }
  evhttp_send_reply(req, 200, "OK", b);
  evbuffer_free(b);
  return body.size();
}

}  // namespace

void reply_hls_playlist(HttpServer& http, evhttp_request* req, const BufferRef& text, int64_t started) {
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", "application/vnd.apple.mpegurl");  // RFC 8216 §4
  evhttp_add_header(h, "Cache-Control", "no-cache");  // a live playlist changes every segment
  http.add_cors_headers(req);
  const uint64_t n = send_buffer(req, text);
  http.log_access(req, 200, n, started);
}

void reply_hls_segment(HttpServer& http, evhttp_request* req, const BufferRef& data, uint32_t max_age_s,
                       int64_t started) {
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", "video/mp2t");
  // The bytes behind a segment URI never change while the state lives (and the state outlives
  // any cache: see HlsStore::grace_ms), so clients and proxies may keep it.
  const std::string cc = "max-age=" + std::to_string(max_age_s);
  evhttp_add_header(h, "Cache-Control", cc.c_str());
  http.add_cors_headers(req);
  const uint64_t n = send_buffer(req, data);
  http.log_access(req, 200, n, started);
}

void serve_hls_playlist(net::ServerContext& ctx, HttpServer& http, evhttp_request* req, const HttpRoute& route) {
  const int64_t started = ctx.timers->now_ms();
  if (serve_hls_from_owner(ctx, http, req, route, protocol::HlsObjectName{true, 0}, started)) return;
  const media::HlsStreamState* st = find_or_404(ctx, http, req, route, started);
  if (!st) return;
  if (!st->has_segments()) {
    // Published, but the first segment is not finished yet: a player retries.
    reply_hls_not_found(http, req, "stream " + route.app + "/" + route.stream + " has no HLS segment yet", started);
    return;
  }
  reply_hls_playlist(http, req, st->playlist_text(), started);
}

void serve_hls_segment(net::ServerContext& ctx, HttpServer& http, evhttp_request* req, const HttpRoute& route) {
  const int64_t started = ctx.timers->now_ms();
  if (serve_hls_from_owner(ctx, http, req, route, protocol::HlsObjectName{false, route.segment}, started)) return;
  const media::HlsStreamState* st = find_or_404(ctx, http, req, route, started);
  if (!st) return;
  const media::HlsSegment* seg = st->segment(route.segment);
  if (!seg) {
    reply_hls_not_found(http, req,
                    "segment " + std::to_string(route.segment) + " of " + route.app + "/" + route.stream +
                        " is not available (expired or not produced)",
                    started);
    return;
  }
  reply_hls_segment(http, req, seg->data, st->segment_max_age_s(), started);
}

void install_hls_handlers(HttpServer& http, net::ServerContext& ctx) {
  http.set_handler(HttpRoute::Kind::HlsPlaylist, [&http, &ctx](evhttp_request* req, const HttpRoute& route) {
    serve_hls_playlist(ctx, http, req, route);
  });
  http.set_handler(HttpRoute::Kind::HlsSegment, [&http, &ctx](evhttp_request* req, const HttpRoute& route) {
    serve_hls_segment(ctx, http, req, route);
  });
}

}  // namespace rill::server
