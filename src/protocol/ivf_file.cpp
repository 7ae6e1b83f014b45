#include "rill/protocol/ivf_file.h"

#include <cstring>
#include <string>

#include "rill/protocol/error.h"

namespace rill::protocol {

namespace {

uint32_t le16(const uint8_t* p) { return uint32_t{p[0]} | (uint32_t{p[1]} << 8); }
uint32_t le32(const uint8_t* p) { return le16(p) | (le16(p + 2) << 16); }

}  // namespace

IvfFile parse_ivf(std::span<const uint8_t> b) {
  // File header: "DKIF", version u16, header size u16, FourCC, width u16, height u16, time base
  // denominator u32 (the rate), numerator u32 (the scale), frame count u32, unused u32.
  if (b.size() < 32 || std::memcmp(b.data(), "DKIF", 4) != 0)
    throw ProtocolError("IVF: no \"DKIF\" file header (" + std::to_string(b.size()) + " bytes)");
  const uint32_t header_size = le16(b.data() + 6);
  if (header_size < 32 || header_size > b.size())
    throw ProtocolError("IVF: header size " + std::to_string(header_size) + ", expected 32 to the file size");
  IvfFile f;
  f.fourcc = (uint32_t{b[8]} << 24) | (uint32_t{b[9]} << 16) | (uint32_t{b[10]} << 8) | b[11];
  f.width = static_cast<uint16_t>(le16(b.data() + 12));
  f.height = static_cast<uint16_t>(le16(b.data() + 14));
  f.timebase_den = le32(b.data() + 16);
  f.timebase_num = le32(b.data() + 20);
  if (f.timebase_den == 0 || f.timebase_num == 0) throw ProtocolError("IVF: time base with a zero term");
  for (size_t at = header_size; at < b.size();) {
    if (b.size() - at < 12)
      throw ProtocolError("IVF: frame header at byte " + std::to_string(at) + " truncated");
    const uint32_t size = le32(b.data() + at);
    const uint64_t pts = le32(b.data() + at + 4) | (uint64_t{le32(b.data() + at + 8)} << 32);
    at += 12;
    if (size > b.size() - at) {
      throw ProtocolError("IVF: frame of " + std::to_string(size) + " bytes at byte " + std::to_string(at) +
                          " runs past the end");
    }
    f.frames.push_back(IvfFrame{pts, b.subspan(at, size)});
    at += size;
  }
  return f;
}

}  // namespace rill::protocol
