#include "rill/protocol/hls_delivery.h"

#include <charconv>
#include <string>

#include "rill/protocol/error.h"

namespace rill::protocol {

namespace {

uint64_t parse_number(std::string_view name, std::string_view v) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) {
    throw ProtocolError(std::string(name) + " is not a decimal integer: \"" + std::string(v.substr(0, 32)) + "\"");
  }
  return n;
}

}  // namespace

HlsDeliveryDirectives parse_hls_delivery_directives(std::string_view query) {
  HlsDeliveryDirectives d;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    if (name == "_HLS_msn") d.msn = parse_number(name, value);
    else if (name == "_HLS_part") d.part = parse_number(name, value);
    else if (name == "_HLS_skip") d.skip = value == "YES" || value == "v2";
  }
  // §6.2.5.2: "_HLS_part ... MUST NOT be used without _HLS_msn" (a bad request).
  if (d.part && !d.msn) throw ProtocolError("_HLS_part without _HLS_msn");
  return d;
}

std::string format_hls_delivery_directives(const HlsDeliveryDirectives& d) {
  std::string q;
  if (d.msn) q += "_HLS_msn=" + std::to_string(*d.msn);
  if (d.part) q += "&_HLS_part=" + std::to_string(*d.part);
  if (d.skip) q += std::string(q.empty() ? "" : "&") + "_HLS_skip=YES";
  return q;
}

HlsBlockVerdict hls_block_verdict(const HlsProgress& p, uint64_t msn, std::optional<uint64_t> part) {
  const bool have = part ? msn < p.next_msn || (msn == p.next_msn && *part < p.open_parts) : msn < p.next_msn;
  if (have || p.ended) return HlsBlockVerdict::Ready;  // an ended playlist gets no more: answer it
  // The last Media Segment the playlist shows: the open one once it has a part, else the last
  // complete one (none yet: -1).
  const int64_t last = p.open_parts > 0 ? static_cast<int64_t>(p.next_msn) : static_cast<int64_t>(p.next_msn) - 1;
  if (msn > static_cast<uint64_t>(last + 2)) return HlsBlockVerdict::TooFar;
  return HlsBlockVerdict::Wait;
}

std::string hls_cache_control(const HlsCachePolicy& c) {
  switch (c.kind) {
    case HlsCacheKind::NoCache:
      break;
    case HlsCacheKind::MaxAge:
      return "max-age=" + std::to_string(c.max_age_s);
    case HlsCacheKind::Immutable:
      return "max-age=" + std::to_string(c.max_age_s) + ", immutable";
  }
  return "no-cache";
}

}  // namespace rill::protocol
