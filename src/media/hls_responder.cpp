#include "rill/media/hls_responder.h"

#include "rill/protocol/error.h"

namespace rill::media {

namespace {

using protocol::HlsCachePolicy;

HlsAnswer error(uint16_t status, std::string reason, uint8_t retry_after_s = 0) {
  HlsAnswer a;
  a.head.status = status;
  a.head.retry_after_s = retry_after_s;
  a.reason = std::move(reason);
  return a;
}

HlsAnswer object(BufferRef body, HlsCachePolicy cache) {
  HlsAnswer a;
  a.head.cache = cache;
  a.body = std::move(body);
  return a;
}

// RFC 8216bis §6.2.5.2: a client gives up on a blocked reload after three target durations;
// the server answers before it does.
int64_t hold_limit_ms(const HlsStreamState& st) {
  return 3 * 1000 * static_cast<int64_t>(st.playlist().state().target_duration);
}

// A live playlist changes every segment: a cache may keep it at most half a target duration
// (RFC 8216 §6.2.1 reload rules), so a proxy such as nginx proxy_cache absorbs the reloads of
// many clients (docs/cluster.md). Under 2 s of target duration that rounds to no caching.
HlsCachePolicy live_playlist_cache(const HlsStreamState& st) {
  const uint32_t target = st.target_duration();
  return target >= 2 ? HlsCachePolicy::max_age(target / 2) : HlsCachePolicy::no_cache();
}

// An LL-HLS playlist answer: the delta update for _HLS_skip. A blocking one answers a URL that
// names what it waited for: a CDN may keep it as long as that position is in the playlist (one
// target duration is well within); the plain one changes with every part.
HlsAnswer ll_playlist(const HlsStreamState& st, const protocol::HlsDeliveryDirectives& d) {
  BufferRef text =
      d.skip ? SharedBuffer::copy_of(std::string_view(st.playlist_text_skipping())) : st.playlist_text();
  return object(std::move(text), d.blocking() ? HlsCachePolicy::max_age(st.playlist().state().target_duration)
                                              : HlsCachePolicy::no_cache());
}

HlsResponse playlist(const HlsStreamState& st, const StreamKey& key, const std::string& directives) {
  if (!st.has_segments()) return error(404, "stream " + key.str() + " has no HLS segment yet");
  if (!st.low_latency()) return object(st.playlist_text(), live_playlist_cache(st));
  protocol::HlsDeliveryDirectives d;
  try {
    d = protocol::parse_hls_delivery_directives(directives);
  } catch (const protocol::ProtocolError& e) {  // the callers send canonical ones
    return error(400, std::string("LL-HLS delivery directives: ") + e.what());
  }
  if (!d.blocking()) return ll_playlist(st, d);
  switch (protocol::hls_block_verdict(st.progress(), *d.msn, d.part)) {
    case protocol::HlsBlockVerdict::Ready:
      return ll_playlist(st, d);
    case protocol::HlsBlockVerdict::TooFar:
      // §6.2.5.2: more than two segments past the last one in the playlist.
      return error(400, "_HLS_msn " + std::to_string(*d.msn) + " is more than two segments ahead of " +
                            key.str() + " (next " + std::to_string(st.progress().next_msn) + ")");
    case protocol::HlsBlockVerdict::Wait:
      break;
  }
  return HlsHold{HlsStore::WaitTarget{false, *d.msn, d.part}, hold_limit_ms(st)};
}

std::string file_name(const StreamKey& key, const protocol::HlsObjectName& o) {
  return protocol::hls_segment_file(o.form, o.sequence) + " of " + key.str();
}

}  // namespace

HlsResponse respond_hls(const HlsStreamState* st, const StreamKey& key, const protocol::HlsObjectName& o) {
  if (!st) return error(404, "stream " + key.str() + " has no HLS playlist");
  if (o.playlist) {
    // A multitrack publish: NAME.m3u8 lists its tracks' renditions (docs/abr.md). Rebuilt with
    // every segment of a rendition: not cached.
    if (st->multivariant()) return object(st->multivariant(), HlsCachePolicy::no_cache());
    return playlist(*st, key, o.directives);
  }
  if (o.variant) {  // a rendition's multivariant entry (docs/abr.md): changes with every segment
    const std::string entry = st->variant_entry();
    if (entry.empty()) return error(404, "stream " + key.str() + " has no HLS segment yet");
    return object(SharedBuffer::copy_of(std::string_view(entry)), HlsCachePolicy::no_cache());
  }
  if (const BufferRef* data = st->file(o.form, o.sequence)) {
    // The bytes behind a segment URI never change while the state lives (and the state outlives
    // any cache: see HlsStore::grace_ms), so clients and proxies may keep it.
    return object(*data, HlsCachePolicy::immutable(st->segment_max_age_s()));
  }
  // §4.4.5.3: the part the playlist's EXT-X-PRELOAD-HINT names is answered once complete.
  if (o.form == protocol::HlsSegmentForm::Part && st->low_latency() && st->live() &&
      o.sequence == st->next_part()) {
    return HlsHold{HlsStore::WaitTarget{true, o.sequence, std::nullopt}, hold_limit_ms(*st)};
  }
  // hls.rewind: a segment of the history is read back from the recording, then answered.
  if (o.form == protocol::HlsSegmentForm::Fmp4 && st->recorded_segment(o.sequence)) {
    return HlsHold{HlsStore::WaitTarget{false, o.sequence, std::nullopt, true}, hold_limit_ms(*st)};
  }
  return error(
      404, file_name(key, o) + " is not available (expired, not produced, or not this stream's container)");
}

HlsAnswer respond_hls_held(const HlsStreamState* st, const StreamKey& key, const protocol::HlsObjectName& o,
                           bool reached) {
  if (!st) return error(404, "stream " + key.str() + " has no HLS playlist any more");
  if (!o.playlist) {
    const BufferRef* data = st->file(o.form, o.sequence);
    if (reached && data) return object(*data, HlsCachePolicy::immutable(st->segment_max_age_s()));
    if (st->recorded_segment(o.sequence))
      return error(404, file_name(key, o) + ": the recording could not be read");
    return error(404, file_name(key, o) + " was not produced (the publisher left)");
  }
  if (!reached) {
    return error(503, key.str() + " playlist: the requested position did not come within 3 target durations",
                 /*retry_after_s=*/1);
  }
  protocol::HlsDeliveryDirectives d;
  try {
    d = protocol::parse_hls_delivery_directives(o.directives);
  } catch (const protocol::ProtocolError& e) {  // cannot be: it was held for them
    return error(400, std::string("LL-HLS delivery directives: ") + e.what());
  }
  return ll_playlist(*st, d);
}

const char* hls_object_content_type(const protocol::HlsObjectName& o) {
  return o.playlist ? "application/vnd.apple.mpegurl" : protocol::hls_content_type(o.form);  // RFC 8216 §4
}

}  // namespace rill::media
