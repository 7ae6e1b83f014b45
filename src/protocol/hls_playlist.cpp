#include "rill/protocol/hls_playlist.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rill::protocol {

std::string hls_segment_file(HlsSegmentForm form, uint64_t number) {
  switch (form) {
    case HlsSegmentForm::Ts:
      return std::to_string(number) + ".ts";
    case HlsSegmentForm::Fmp4:
      return std::to_string(number) + ".m4s";
    case HlsSegmentForm::Init:
      return "init-" + std::to_string(number) + ".mp4";
    case HlsSegmentForm::Part:
      return "part-" + std::to_string(number) + ".m4s";
  }
  return {};
}

std::optional<std::pair<HlsSegmentForm, std::string_view>> split_hls_segment_file(std::string_view file) {
  auto strip = [&file](std::string_view prefix, std::string_view suffix) {
    if (file.size() < prefix.size() + suffix.size() || !file.starts_with(prefix) || !file.ends_with(suffix))
      return false;
    file = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
    return true;
  };
  if (strip("", ".ts")) return std::pair{HlsSegmentForm::Ts, file};
  if (strip("part-", ".m4s")) return std::pair{HlsSegmentForm::Part, file};
  if (strip("", ".m4s")) return std::pair{HlsSegmentForm::Fmp4, file};
  if (strip("init-", ".mp4")) return std::pair{HlsSegmentForm::Init, file};
  return std::nullopt;
}

const char* hls_content_type(HlsSegmentForm form) {
  return form == HlsSegmentForm::Ts ? "video/mp2t" : "video/mp4";
}

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

void HlsPlaylist::continue_from(uint64_t next_sequence, uint64_t discontinuities_before) {
  if (!state_.segments.empty()) return;
  state_.media_sequence = next_sequence;
  state_.discontinuity_sequence = discontinuities_before;
  state_.pending_discontinuity = true;
}

uint64_t HlsPlaylist::discontinuities_so_far() const {
  uint64_t n = state_.discontinuity_sequence;
  for (const auto& s : state_.segments) n += s.discontinuity ? 1 : 0;
  return n;
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
  e.parts = std::move(state_.open_parts);
  state_.open_parts.clear();
  state_.pending_discontinuity = false;
  // §4.3.3.1 and §6.2.1: each rounded EXTINF <= target duration, which must not change; so it
  // only ever grows (a late increase is better than a segment the client rejects).
  uint32_t rounded = hls_rounded_duration(duration_s);
  if (rounded > state_.target_duration) state_.target_duration = rounded;
  state_.segments.push_back(std::move(e));

  double total = 0;
  for (const auto& s : state_.segments) total += s.duration_s;
  const double min_total = 3.0 * state_.target_duration;  // §6.2.2
  while (state_.segments.size() > window_ && total - state_.segments.front().duration_s >= min_total) {
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

void HlsPlaylist::add_part(double duration_s, bool independent, std::string uri, std::string map_uri) {
  if (!(duration_s >= 0) || duration_s > 1e9) duration_s = 0;
  state_.open_parts.push_back(HlsPartEntry{duration_s, independent, std::move(uri)});
  state_.open_map_uri = std::move(map_uri);
}

namespace {

void append_parts(std::string& out, const std::vector<HlsPartEntry>& parts) {
  char line[64];
  for (const auto& p : parts) {
    // RFC 8216bis §4.4.4.9
    std::snprintf(line, sizeof line, "#EXT-X-PART:DURATION=%.3f,URI=\"", p.duration_s);
    out += line;
    out += p.uri;
    out += p.independent ? "\",INDEPENDENT=YES\n" : "\"\n";
  }
}

// LL-HLS header tags (RFC 8216bis §4.4.3.7, §4.4.3.8).
void append_low_latency_header(std::string& out, const HlsPlaylistState& st) {
  char line[160];
  // PART-HOLD-BACK "MUST be at least twice the Part Target Duration" and "SHOULD be at least
  // three times" (§4.4.3.8): three.
  std::snprintf(line, sizeof line,
                "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=%.1f,PART-HOLD-BACK=%.3f\n"
                "#EXT-X-PART-INF:PART-TARGET=%.3f\n",
                hls_can_skip_until_s(st), 3 * st.part_target_s, st.part_target_s);
  out += line;
}

// How many of the oldest segments (the recorded run, then the window) a delta update leaves
// out: those that end more than CAN-SKIP-UNTIL before the end of the playlist (§6.2.5.1).
size_t skippable_segments(const HlsPlaylistState& st, std::span<const HlsRecordedSegment> run) {
  double remaining = 0;
  for (const auto& s : run) remaining += s.duration_s;
  for (const auto& s : st.segments) remaining += s.duration_s;
  size_t n = 0;
  auto count = [&](double duration_s) {
    remaining -= duration_s;
    if (remaining <= hls_can_skip_until_s(st)) return false;
    ++n;
    return true;
  };
  for (const auto& s : run) {
    if (!count(s.duration_s)) return n;
  }
  for (const auto& s : st.segments) {
    if (!count(s.duration_s)) return n;
  }
  return n;
}

// RFC 8216bis §4.4.5.4: LAST-MSN is "the Media Sequence Number of the last Media Segment
// currently in the specified Rendition. If the Rendition contains Partial Segments then this value
// is the Media Sequence Number of the last Partial Segment"; LAST-PART its part index.
void append_rendition_reports(std::string& out, const HlsPlaylistState& st) {
  if (st.rendition_reports.empty()) return;
  uint64_t msn = st.media_sequence + st.segments.size();
  size_t parts = st.open_parts.size();
  if (parts == 0) {
    if (st.segments.empty()) return;
    msn = st.segments.back().sequence;
    parts = st.segments.back().parts.size();
  }
  std::string position = ",LAST-MSN=" + std::to_string(msn);
  if (parts > 0) position += ",LAST-PART=" + std::to_string(parts - 1);
  for (const std::string& uri : st.rendition_reports) {
    out += "#EXT-X-RENDITION-REPORT:URI=\"" + uri + "\"" + position + "\n";
  }
}

// The recorded run, past the `skipped` segments of a delta update, under the window's first
// EXT-X-MAP (recorded with the same init section: docs/hls.md "Rewind"), each segment under the
// URI it had in the window (its directory, "cam/", and the segment's file name; fMP4 only).
// Returns the EXT-X-MAP it leaves in force (null: none).
const std::string* append_recorded_run(std::string& out, const HlsPlaylistState& st,
                                       std::span<const HlsRecordedSegment> run, size_t skipped) {
  if (run.size() <= skipped) return nullptr;
  const HlsSegmentEntry& front = st.segments.front();
  const std::string* map = front.map_uri.empty() ? nullptr : &front.map_uri;
  if (map) out += "#EXT-X-MAP:URI=\"" + *map + "\"\n";
  const std::string_view dir = std::string_view(front.uri).substr(0, front.uri.rfind('/') + 1);
  char line[48];
  for (const auto& s : run.subspan(skipped)) {
    if (s.discontinuity) out += "#EXT-X-DISCONTINUITY\n";  // §4.3.2.3
    std::snprintf(line, sizeof line, "#EXTINF:%.3f,\n", s.duration_s);
    out += line;
    out += dir;
    out += hls_segment_file(HlsSegmentForm::Fmp4, s.sequence);
    out += '\n';
  }
  return map;
}

}  // namespace

uint32_t hls_target_duration(const HlsPlaylistState& st) {
  uint32_t target = st.target_duration;
  for (const auto& s : st.segments) {
    uint32_t r = hls_rounded_duration(s.duration_s);
    if (r > target) target = r;  // §4.3.3.1, should a state be assembled by hand
  }
  return target;
}

std::span<const HlsRecordedSegment> hls_recorded_run(const HlsPlaylistState& st,
                                                     std::span<const HlsRecordedSegment> recorded) {
  if (st.segments.empty()) return {};
  const uint64_t first = st.segments.front().sequence;
  size_t end = 0;
  while (end < recorded.size() && recorded[end].sequence < first) ++end;
  if (end == 0 || recorded[end - 1].sequence + 1 != first) return {};
  // Only the contiguous tail: sequence numbers follow each other up to the window.
  size_t from = end - 1;
  while (from > 0 && recorded[from - 1].sequence + 1 == recorded[from].sequence) --from;
  return recorded.subspan(from, end - from);
}

std::string render_media_playlist(const HlsPlaylistState& st, bool skip,
                                  std::span<const HlsRecordedSegment> recorded) {
  const std::span<const HlsRecordedSegment> run = hls_recorded_run(st, recorded);
  std::string out;
  out.reserve(128 + st.segments.size() * (40 + (st.segments.empty() ? 0 : st.segments.front().uri.size())));
  char line[96];
  // §4.3.1.1 EXTM3U first; §4.3.1.2 version 3 allows decimal-floating-point EXTINF; EXT-X-MAP
  // in a playlist without EXT-X-I-FRAMES-ONLY needs version 6 (§7).
  bool fmp4 = false;
  for (const auto& s : st.segments) fmp4 = fmp4 || !s.map_uri.empty();
  const bool ll = st.part_target_s > 0;
  // RFC 8216bis §7: EXT-X-SKIP (Playlist Delta Updates) needs version 9.
  out += ll     ? "#EXTM3U\n#EXT-X-VERSION:9\n"
         : fmp4 ? "#EXTM3U\n#EXT-X-VERSION:6\n"
                : "#EXTM3U\n#EXT-X-VERSION:3\n";
  uint32_t target = hls_target_duration(st);
  for (const auto& s : run) target = std::max(target, hls_rounded_duration(s.duration_s));
  std::snprintf(line, sizeof line, "#EXT-X-TARGETDURATION:%u\n", target);
  out += line;
  if (ll) append_low_latency_header(out, st);
  // The recorded run is what slid out of the window: the playlist starts at its first segment,
  // and the tags it carries were counted in the discontinuity sequence when they slid out.
  uint64_t discontinuity_sequence = st.discontinuity_sequence;
  for (const auto& s : run) discontinuity_sequence -= s.discontinuity && discontinuity_sequence > 0 ? 1 : 0;
  std::snprintf(
      line, sizeof line, "#EXT-X-MEDIA-SEQUENCE:%llu\n",
      static_cast<unsigned long long>(run.empty() ? st.media_sequence : run.front().sequence));  // §4.3.3.2
  out += line;
  if (discontinuity_sequence > 0) {
    std::snprintf(line, sizeof line, "#EXT-X-DISCONTINUITY-SEQUENCE:%llu\n",
                  static_cast<unsigned long long>(discontinuity_sequence));  // §4.3.3.3
    out += line;
  }
  const size_t skipped = ll && skip ? skippable_segments(st, run) : 0;
  if (skipped > 0) {
    std::snprintf(line, sizeof line, "#EXT-X-SKIP:SKIPPED-SEGMENTS=%zu\n", skipped);  // RFC 8216bis §4.4.5.2
    out += line;
  }
  // RFC 8216bis §4.4.4.9: parts of segments more than three target durations from the end of
  // the playlist are left out.
  double from_end = 0;
  for (const auto& s : st.segments) from_end += s.duration_s;
  const std::string* map = append_recorded_run(out, st, run, skipped);
  size_t index = run.size();  // the run's segments come first
  for (const auto& s : st.segments) {
    from_end -= s.duration_s;
    if (index++ < skipped) continue;
    if (s.discontinuity) out += "#EXT-X-DISCONTINUITY\n";  // §4.3.2.3
    if (!s.map_uri.empty() && (!map || *map != s.map_uri)) {
      // §4.3.2.5: applies to every Media Segment after it until the next EXT-X-MAP.
      out += "#EXT-X-MAP:URI=\"" + s.map_uri + "\"\n";
      map = &s.map_uri;
    }
    if (ll && from_end + s.duration_s <= 3.0 * target) append_parts(out, s.parts);
    std::snprintf(line, sizeof line, "#EXTINF:%.3f,\n", s.duration_s);  // §4.3.2.1
    out += line;
    out += s.uri;
    out += '\n';
  }
  if (ll && !st.ended) {
    if (!st.open_parts.empty() && !st.open_map_uri.empty() && (!map || *map != st.open_map_uri)) {
      out += "#EXT-X-MAP:URI=\"" + st.open_map_uri + "\"\n";
    }
    append_parts(out, st.open_parts);
    // RFC 8216bis §4.4.5.3: the part the server is producing now; a request for it is held.
    if (!st.preload_hint_uri.empty())
      out += "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"" + st.preload_hint_uri + "\"\n";
    append_rendition_reports(out, st);
  }
  if (st.ended) out += "#EXT-X-ENDLIST\n";  // §4.3.3.4
  return out;
}

}  // namespace rill::protocol
