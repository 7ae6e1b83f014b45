#pragma once
// Big- and little-endian loads and stores on raw bytes: the one place the wire formats (RTMP
// chunk headers, FLV tags, AMF0, worker-link frames, MPEG-TS) get their integer fields from.
// Callers check bounds; these only touch the bytes they name.
#include <cstdint>

namespace rill {

inline uint16_t load_be16(const uint8_t* p) { return static_cast<uint16_t>((uint16_t{p[0]} << 8) | p[1]); }
inline uint32_t load_be24(const uint8_t* p) { return (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2]; }
inline uint32_t load_be32(const uint8_t* p) { return (uint32_t{p[0]} << 24) | load_be24(p + 1); }
inline uint64_t load_be64(const uint8_t* p) { return (uint64_t{load_be32(p)} << 32) | load_be32(p + 4); }
inline uint32_t load_le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

// Each store returns the pointer past what it wrote, so headers can be built in sequence.
inline uint8_t* store_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
  return p + 2;
}
inline uint8_t* store_be24(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 16);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v);
  return p + 3;
}
inline uint8_t* store_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  return store_be24(p + 1, v);
}
inline uint8_t* store_le32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
  return p + 4;
}

}  // namespace rill
