#pragma once
// LL-HLS Playlist Delivery Directives (RFC 8216bis §6.2.5): the query parameters a client adds
// to a Media Playlist request, and the rule that decides whether a blocking reload is answered
// now, held, or refused. Pure: the caller supplies how far the stream has got.
//
// Also the head of an HLS answer (status, cache policy, Retry-After) as one type: what the HLS
// responder decides (media/hls_responder.h), what the worker link carries from the owner of a
// stream to the worker that asked (protocol/worker_link_frame.h), and what HTTP turns into a
// status line and headers (hls_cache_control: the one Cache-Control text).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rill::protocol {

struct HlsDeliveryDirectives {
  std::optional<uint64_t> msn;   // _HLS_msn=<M>: hold until Media Segment M (or later) is listed
  std::optional<uint64_t> part;  // _HLS_part=<N>: ... Partial Segment N of it (needs _HLS_msn)
  bool skip = false;             // _HLS_skip=YES|v2: a Playlist Delta Update is wanted (§6.2.5.1)
  bool blocking() const { return msn.has_value(); }
};

// Reads the directives from a raw query ("a=b&_HLS_msn=12&_HLS_part=3"); other parameters are
// ignored. Throws ProtocolError for what §6.2.5.2 calls a bad request: _HLS_part without
// _HLS_msn, or a value that is not a decimal integer.
HlsDeliveryDirectives parse_hls_delivery_directives(std::string_view query);
// The canonical query of the directives ("_HLS_msn=5&_HLS_part=2&_HLS_skip=YES", "" for none):
// equal directives, equal text (one worker-link request per distinct position).
std::string format_hls_delivery_directives(const HlsDeliveryDirectives& d);

// How far a live stream has got: segments before `next_msn` are complete and listed;
// `open_parts` Partial Segments of segment `next_msn` exist.
struct HlsProgress {
  uint64_t next_msn = 0;
  uint64_t open_parts = 0;
  bool ended = false;  // EXT-X-ENDLIST: nothing more will come
};

enum class HlsBlockVerdict {
  Ready,     // the playlist already holds what was asked for: answer now
  Wait,      // hold the request until it does
  TooFar,    // "_HLS_msn is greater than the Media Sequence Number of the last Media Segment in
             // the current Playlist plus two": answer 400 (§6.2.5.2)
};

HlsBlockVerdict hls_block_verdict(const HlsProgress& p, uint64_t msn, std::optional<uint64_t> part);

// How long a client or an HTTP cache may keep an HLS answer.
enum class HlsCacheKind : uint8_t {
  NoCache = 0,    // Cache-Control: no-cache (max_age_s is 0)
  MaxAge = 1,     // Cache-Control: max-age=N
  Immutable = 2,  // Cache-Control: max-age=N, immutable (the bytes behind the URI never change)
};
struct HlsCachePolicy {
  HlsCacheKind kind = HlsCacheKind::NoCache;
  uint32_t max_age_s = 0;
  static HlsCachePolicy no_cache() { return {}; }
  static HlsCachePolicy max_age(uint32_t s) { return {HlsCacheKind::MaxAge, s}; }
  static HlsCachePolicy immutable(uint32_t s) { return {HlsCacheKind::Immutable, s}; }
  bool operator==(const HlsCachePolicy&) const = default;
};
// The Cache-Control value: "no-cache", "max-age=N" or "max-age=N, immutable".
std::string hls_cache_control(const HlsCachePolicy& c);

// The status line and headers of one HLS answer, whichever worker sends it.
struct HlsAnswerHead {
  uint16_t status = 200;      // 200, or 400 / 404 / 503 (the body is then the reason)
  HlsCachePolicy cache;       // 200 only; an error is never cached
  uint8_t retry_after_s = 0;  // Retry-After (503), 0: none
  bool operator==(const HlsAnswerHead&) const = default;
};

}  // namespace rill::protocol
