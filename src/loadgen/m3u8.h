#pragma once
// rill-bench: what an HLS player needs from RFC 8216 - a media playlist's target duration, media
// sequence, segments and end marker; a master playlist's variant URIs - and a check of MPEG-TS
// framing (ISO 13818-1: 188-byte packets, each starting with the sync byte 0x47).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rill::loadgen {

struct M3u8 {
  bool valid = false;         // starts with #EXTM3U
  bool master = false;        // has #EXT-X-STREAM-INF
  double target_duration = 0; // #EXT-X-TARGETDURATION (seconds)
  uint64_t media_sequence = 0;  // #EXT-X-MEDIA-SEQUENCE (default 0)
  bool endlist = false;       // #EXT-X-ENDLIST
  struct Segment {
    uint64_t sequence = 0;
    double duration = 0;
    std::string uri;
  };
  std::vector<Segment> segments;      // media playlist
  std::vector<std::string> variants;  // master playlist: variant URIs in order
};

M3u8 parse_m3u8(std::string_view text);

// Feed the bytes of one TS segment (or of consecutive segments; the check restarts with reset()).
class TsChecker {
 public:
  void reset() { offset_ = 0; }
  // Returns the number of packets whose first byte is not 0x47 in these bytes.
  uint64_t feed(std::span<const uint8_t> bytes);
  // True when the bytes so far end on a packet boundary.
  bool aligned() const { return offset_ % 188 == 0; }
  uint64_t packets() const { return offset_ / 188; }

 private:
  uint64_t offset_ = 0;
};

}  // namespace rill::loadgen
