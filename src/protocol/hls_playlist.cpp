#include "rill/protocol/hls_playlist.h"

#include <cmath>
#include <cstdio>

namespace rill::protocol {

std::string hls_segment_file(HlsSegmentForm form, uint64_t number) {
  switch (form) {
    case HlsSegmentForm::Ts: return std::to_string(number) + ".ts";
    case HlsSegmentForm::Fmp4: return std::to_string(number) + ".m4s";
    case HlsSegmentForm::Init: return "init-" + std::to_string(number) + ".mp4";
  }
  return {};
}

std::optional<std::pair<HlsSegmentForm, std::string_view>> split_hls_segment_file(std::string_view file) {
  auto strip = [&file](std::string_view prefix, std::string_view suffix) {
    if (file.size() < prefix.size() + suffix.size() || !file.starts_with(prefix) || !file.ends_with(suffix)) return false;
    file = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
    return true;
  };
  if (strip("", ".ts")) return std::pair{HlsSegmentForm::Ts, file};
  if (strip("", ".m4s")) return std::pair{HlsSegmentForm::Fmp4, file};
  if (strip("init-", ".mp4")) return std::pair{HlsSegmentForm::Init, file};
  return std::nullopt;
}

const char* hls_content_type(HlsSegmentForm form) { return form == HlsSegmentForm::Ts ? "video/mp2t" : "video/mp4"; }

uint32_t hls_rounded_duration(double d) {
  if (!(d > 0)) return 0;  // also NaN
  if (d > 1e9) d = 1e9;
  double millis = std::round(d * 1000.0);  // the value "%.3f" writes
  return static_cast<uint32_t>(std::llround(millis / 1000.0));
}

HlsPlaylist::HlsPlaylist(size_t window, double fragment_s) : window_(window ? window : 1) {
  double f = fragment_s > 0 && fragment_s < 1e9 ? std::ceil(fragment_s) : 1.0;
  state_.target_duration = f < 1 ? 1 : static_cast<uint32_t>(f);
}

void HlsPlaylist::restart() {
  state_.ended = false;
  state_.pending_discontinuity = true;
}

HlsPlaylist::Added HlsPlaylist::add_segment(double duration_s, bool discontinuity, std::string uri,
                                            std::string map_uri) {
  if (state_.ended) restart();
  if (!(duration_s >= 0) || duration_s > 1e9) duration_s = 0;  // NaN, negative, absurd
  Added r{next_sequence(), {}};
  HlsSegmentEntry e;
  e.sequence = r.sequence;
  e.duration_s = duration_s;
  e.discontinuity = discontinuity || state_.pending_discontinuity;
  e.uri = std::move(uri);
  e.map_uri = std::move(map_uri);
  state_.pending_discontinuity = false;
  // §4.3.3.1 and §6.2.1: each rounded EXTINF <= target duration, which must not change; so it
  // only ever grows (a late increase is better than a segment the client rejects).
  uint32_t rounded = hls_rounded_duration(duration_s);
  if (rounded > state_.target_duration) state_.target_duration = rounded;
  state_.segments.push_back(std::move(e));

  double total = 0;
  for (const auto& s : state_.segments) total += s.duration_s;
  const double min_total = 3.0 * state_.target_duration;  // §6.2.2
  while (state_.segments.size() > window_ &&
         total - state_.segments.front().duration_s >= min_total) {
    HlsSegmentEntry& front = state_.segments.front();
    total -= front.duration_s;
    ++state_.media_sequence;
    // §4.3.3.3: when a segment with EXT-X-DISCONTINUITY leaves, the sequence counts it.
    if (front.discontinuity) ++state_.discontinuity_sequence;
    r.removed.push_back(std::move(front));
    state_.segments.pop_front();
  }
  return r;
}

std::string render_media_playlist(const HlsPlaylistState& st) {
  std::string out;
  out.reserve(128 + st.segments.size() * (40 + (st.segments.empty() ? 0 : st.segments.front().uri.size())));
  char line[96];
  // §4.3.1.1 EXTM3U first; §4.3.1.2 version 3 allows decimal-floating-point EXTINF; EXT-X-MAP
  // in a playlist without EXT-X-I-FRAMES-ONLY needs version 6 (§7).
  bool fmp4 = false;
  for (const auto& s : st.segments) fmp4 = fmp4 || !s.map_uri.empty();
  out += fmp4 ? "#EXTM3U\n#EXT-X-VERSION:6\n" : "#EXTM3U\n#EXT-X-VERSION:3\n";
  uint32_t target = st.target_duration;
  for (const auto& s : st.segments) {
    uint32_t r = hls_rounded_duration(s.duration_s);
    if (r > target) target = r;  // §4.3.3.1, should a state be assembled by hand
  }
  std::snprintf(line, sizeof line, "#EXT-X-TARGETDURATION:%u\n", target);
  out += line;
  std::snprintf(line, sizeof line, "#EXT-X-MEDIA-SEQUENCE:%llu\n",
                static_cast<unsigned long long>(st.media_sequence));  // §4.3.3.2
  out += line;
  if (st.discontinuity_sequence > 0) {
    std::snprintf(line, sizeof line, "#EXT-X-DISCONTINUITY-SEQUENCE:%llu\n",
                  static_cast<unsigned long long>(st.discontinuity_sequence));  // §4.3.3.3
    out += line;
  }
  const std::string* map = nullptr;
  for (const auto& s : st.segments) {
    if (s.discontinuity) out += "#EXT-X-DISCONTINUITY\n";  // §4.3.2.3
    if (!s.map_uri.empty() && (!map || *map != s.map_uri)) {
      // §4.3.2.5: applies to every Media Segment after it until the next EXT-X-MAP.
      out += "#EXT-X-MAP:URI=\"" + s.map_uri + "\"\n";
      map = &s.map_uri;
    }
    std::snprintf(line, sizeof line, "#EXTINF:%.3f,\n", s.duration_s);  // §4.3.2.1
    out += line;
    out += s.uri;
    out += '\n';
  }
  if (st.ended) out += "#EXT-X-ENDLIST\n";  // §4.3.3.4
  return out;
}

}  // namespace rill::protocol
