#include "rill/server/hls_blocking.h"

#include <string>

#include "rill/core/buffer.h"
#include "rill/server/hls_handler.h"
#include "rill/server/http_server.h"

namespace rill::server {

namespace {

// One held request. Deleted when answered or when its client goes away, whichever comes first.
struct HeldHls {
  net::ServerContext& ctx;
  HttpServer& http;
  HttpHeld ex;
  HttpRequestInfo info;
  media::StreamKey key;
  bool part_file = false;  // else a playlist
  uint64_t part_index = 0;
  bool skip = false;
  uint64_t wait_id = 0;
};

int64_t hold_limit_ms(const media::HlsStreamState& st) {
  // RFC 8216bis §6.2.5.2: a client gives up on a blocked reload after three target durations;
  // answer before it does.
  return 3 * 1000 * static_cast<int64_t>(st.playlist().state().target_duration);
}

void reply_playlist_now(HttpServer& http, HttpExchange& ex, const HttpRequestInfo& info,
                        const media::HlsStreamState& st, bool skip, bool blocking) {
  const BufferRef text =
      skip ? SharedBuffer::copy_of(std::string_view(st.playlist_text_skipping())) : st.playlist_text();
  // A blocking response answers a URL that names what it waited for: a CDN may keep it as long
  // as that position is in the playlist (one target duration is well within).
  const std::string cc = "max-age=" + std::to_string(st.playlist().state().target_duration);
  reply_hls_playlist(http, ex, info, text, blocking ? cc.c_str() : "no-cache");
}

void answer(HeldHls* h, bool ok) {
  HttpExchange* ex = h->ex.get();
  if (!ex) {  // the client left (its abandoned callback would have cancelled the wait)
    delete h;
    return;
  }
  ex->on_abandoned(nullptr);
  const media::HlsStreamState* st = h->ctx.streams->hls().find(h->key);
  const std::string what =
      h->key.str() + (h->part_file ? " part " + std::to_string(h->part_index) : " playlist");
  if (st && h->part_file) {
    const BufferRef* data = st->file(protocol::HlsSegmentForm::Part, h->part_index);
    if (ok && data)
      reply_hls_segment(h->http, *ex, h->info, *data, st->segment_max_age_s(),
                        protocol::HlsSegmentForm::Part);
    else
      h->http.reply_error(*ex, h->info, 404, what + " was not produced (the publisher left)");
  } else if (st && ok) {
    reply_playlist_now(h->http, *ex, h->info, *st, h->skip, true);
  } else if (st) {
    ex->add_header("Retry-After", "1");
    h->http.reply_error(*ex, h->info, 503,
                        what + ": the requested position did not come within 3 target durations");
  } else {
    h->http.reply_error(*ex, h->info, 404, "stream " + h->key.str() + " has no HLS playlist any more");
  }
  delete h;
}

void hold(HeldHls* h, HttpExchange& ex, const media::HlsStreamState& st, media::HlsStore::WaitTarget target) {
  h->wait_id = h->ctx.streams->hls().wait(h->key, target, hold_limit_ms(st), [h](bool ok) { answer(h, ok); });
  h->ex = ex.hold();
  ex.on_abandoned([h] {
    h->ctx.streams->hls().cancel_wait(h->wait_id);
    delete h;
  });
}

}  // namespace

void serve_hls_directed_playlist(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex,
                                 const HttpRequestInfo& info, const media::HlsStreamState& st,
                                 const protocol::HlsDeliveryDirectives& d) {
  if (!d.blocking()) return reply_playlist_now(http, ex, info, st, d.skip, false);
  switch (protocol::hls_block_verdict(st.progress(), *d.msn, d.part)) {
    case protocol::HlsBlockVerdict::Ready:
      return reply_playlist_now(http, ex, info, st, d.skip, true);
    case protocol::HlsBlockVerdict::TooFar:
      // §6.2.5.2: more than two segments past the last one in the playlist.
      return http.reply_error(ex, info, 400,
                              "_HLS_msn " + std::to_string(*d.msn) + " is more than two segments ahead of " +
                                  st.key().str() + " (next " + std::to_string(st.progress().next_msn) + ")");
    case protocol::HlsBlockVerdict::Wait:
      break;
  }
  auto* h = new HeldHls{ctx, http, {}, info, st.key()};
  h->skip = d.skip;
  hold(h, ex, st, media::HlsStore::WaitTarget{false, *d.msn, d.part});
}

bool hold_hls_hinted_part(net::ServerContext& ctx, HttpServer& http, HttpExchange& ex,
                          const HttpRequestInfo& info, const media::HlsStreamState& st, uint64_t index) {
  if (!st.low_latency() || !st.live() || index != st.next_part()) return false;
  auto* h = new HeldHls{ctx, http, {}, info, st.key()};
  h->part_file = true;
  h->part_index = index;
  hold(h, ex, st, media::HlsStore::WaitTarget{true, index, std::nullopt});
  return true;
}

}  // namespace rill::server
