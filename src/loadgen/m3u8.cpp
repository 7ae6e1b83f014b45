#include "m3u8.h"

#include <charconv>
#include <cstdlib>

namespace rill::loadgen {

static std::string_view trim_line(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

static double parse_double(std::string_view s) {
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() ? v : 0;
}

M3u8 parse_m3u8(std::string_view text) {
  M3u8 m;
  bool first = true;
  bool stream_inf = false;
  double next_duration = 0;
  uint64_t seq = 0;
  bool seq_set = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    std::string_view line = trim_line(text.substr(pos, e - pos));
    pos = e + 1;
    if (line.empty()) continue;
    if (first) {
      first = false;
      if (line.substr(0, 7) != "#EXTM3U") return m;
      m.valid = true;
      continue;
    }
    if (line.front() == '#') {
      auto value = [&](std::string_view tag) -> std::optional<std::string_view> {
        if (line.substr(0, tag.size()) == tag) return line.substr(tag.size());
        return std::nullopt;
      };
      if (auto v = value("#EXT-X-TARGETDURATION:")) {
        m.target_duration = parse_double(*v);
      } else if (auto v2 = value("#EXT-X-MEDIA-SEQUENCE:")) {
        uint64_t n = 0;
        std::from_chars(v2->data(), v2->data() + v2->size(), n);
        m.media_sequence = n;
        if (!seq_set) seq = n;
        seq_set = true;
      } else if (auto v3 = value("#EXTINF:")) {
        next_duration = parse_double(v3->substr(0, v3->find(',')));
      } else if (value("#EXT-X-STREAM-INF:")) {
        stream_inf = true;
        m.master = true;
      } else if (line == "#EXT-X-ENDLIST") {
        m.endlist = true;
      }
      continue;
    }
    // A URI line.
    if (stream_inf) {
      m.variants.emplace_back(line);
      stream_inf = false;
    } else {
      if (!seq_set) seq_set = true;  // no MEDIA-SEQUENCE tag before the first segment: 0
      m.segments.push_back({seq++, next_duration, std::string(line)});
      next_duration = 0;
    }
  }
  return m;
}

uint64_t TsChecker::feed(std::span<const uint8_t> bytes) {
  uint64_t bad = 0;
  uint64_t skip = (188 - offset_ % 188) % 188;  // bytes until the next packet start
  for (uint64_t i = skip; i < bytes.size(); i += 188) {
    if (bytes[i] != 0x47) ++bad;
  }
  offset_ += bytes.size();
  return bad;
}

}  // namespace rill::loadgen
