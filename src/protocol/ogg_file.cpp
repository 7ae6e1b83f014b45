#include "rill/protocol/ogg_file.h"

#include <cstring>
#include <string>
#include <utility>

#include "rill/protocol/error.h"

namespace rill::protocol {

std::vector<std::vector<uint8_t>> ogg_packets(std::span<const uint8_t> b) {
  // Page header (RFC 3533 §6): capture_pattern "OggS" (4), stream_structure_version (1), header_type_flag
  // (1), granule_position (8), bitstream_serial_number (4), page_sequence_number (4), CRC_checksum (4),
  // number_page_segments (1), segment_table (number_page_segments).
  constexpr size_t kPageHeader = 27;
  std::vector<std::vector<uint8_t>> packets;
  std::vector<uint8_t> open;
  uint32_t serial = 0;
  for (size_t at = 0; at < b.size();) {
    if (b.size() - at < kPageHeader || std::memcmp(b.data() + at, "OggS", 4) != 0)
      throw ProtocolError("Ogg: no page (\"OggS\") at byte " + std::to_string(at));
    if (b[at + 4] != 0)
      throw ProtocolError("Ogg: page version " + std::to_string(b[at + 4]) + " at byte " +
                          std::to_string(at) + ", expected 0");
    const uint8_t* s = b.data() + at + 14;
    const uint32_t page_serial =
        uint32_t{s[0]} | (uint32_t{s[1]} << 8) | (uint32_t{s[2]} << 16) | (uint32_t{s[3]} << 24);
    if (at == 0) serial = page_serial;
    const size_t segments = b[at + 26];
    if (b.size() - at - kPageHeader < segments)
      throw ProtocolError("Ogg: segment table past the end at byte " + std::to_string(at));
    const uint8_t* lacing = b.data() + at + kPageHeader;
    size_t body = at + kPageHeader + segments;
    size_t body_size = 0;
    for (size_t i = 0; i < segments; ++i) body_size += lacing[i];
    if (b.size() - body < body_size)
      throw ProtocolError("Ogg: page at byte " + std::to_string(at) + " runs past the end");
    if (page_serial == serial) {
      for (size_t i = 0; i < segments; ++i) {
        open.insert(open.end(), b.begin() + body, b.begin() + body + lacing[i]);
        body += lacing[i];
        if (lacing[i] < 255) packets.push_back(std::exchange(open, {}));
      }
    }
    at += kPageHeader + segments + body_size;
  }
  return packets;
}

}  // namespace rill::protocol
