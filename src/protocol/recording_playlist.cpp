#include "rill/protocol/recording_playlist.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace rill::protocol {

namespace {

struct Segment {
  uint64_t offset = 0, size = 0;
  double start = 0, duration = 0;  // start: Unix seconds
};

// The file's segments in [from, to].
std::vector<Segment> file_segments(const RecordingPlaylistFile& f, const RecordingPlaylistOptions& o) {
  std::vector<Segment> out;
  if (f.fragments.empty()) return out;
  const double origin = f.fragments.front().start_seconds;
  const double target = o.segment_seconds + 1e-3;
  for (const Fmp4Fragment& frag : f.fragments) {
    const bool opens = frag.keyframe && (out.empty() || out.back().duration + frag.duration_seconds > target);
    if (opens) {
      out.push_back({frag.offset, 0, f.start + frag.start_seconds - origin, 0});
    } else if (out.empty()) {
      continue;  // before the first keyframe
    }
    Segment& s = out.back();
    s.size = frag.offset + frag.size - s.offset;
    s.duration += frag.duration_seconds;
  }
  std::vector<Segment> kept;
  for (const Segment& s : out) {
    if (o.from && s.start + s.duration <= *o.from) continue;
    if (o.to && s.start > *o.to) continue;
    kept.push_back(s);
  }
  return kept;
}

// RFC 3339 with milliseconds, UTC (RFC 8216 §4.3.2.6 wants ISO 8601 with a time zone).
std::string date_time(double unix_seconds) {
  const auto ms = static_cast<int64_t>(std::llround(unix_seconds * 1000));
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return out;
}

std::string byte_range(uint64_t size, uint64_t offset) {
  return std::to_string(size) + "@" + std::to_string(offset);
}

}  // namespace

std::string recording_vod_playlist(const std::vector<RecordingPlaylistFile>& files,
                                   const RecordingPlaylistOptions& options) {
  std::string body;
  long target = 1;
  bool first_file = true;
  for (const RecordingPlaylistFile& f : files) {
    const std::vector<Segment> segments = file_segments(f, options);
    if (segments.empty() || f.init_size == 0) continue;
    if (!first_file) body += "#EXT-X-DISCONTINUITY\n";
    first_file = false;
    body += "#EXT-X-MAP:URI=\"" + f.uri + "\",BYTERANGE=\"" + byte_range(f.init_size, 0) + "\"\n";
    body += "#EXT-X-PROGRAM-DATE-TIME:" + date_time(segments.front().start) + "\n";
    for (const Segment& s : segments) {
      char extinf[48];
      std::snprintf(extinf, sizeof extinf, "#EXTINF:%.3f,\n", s.duration);
      body += extinf;
      body += "#EXT-X-BYTERANGE:" + byte_range(s.size, s.offset) + "\n" + f.uri + "\n";
      target = std::max(target, std::lround(s.duration));
    }
  }
  if (first_file) return {};
  return "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:" + std::to_string(target) +
         "\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-INDEPENDENT-SEGMENTS\n" + body +
         "#EXT-X-ENDLIST\n";
}

}  // namespace rill::protocol
