#include "rill/protocol/crc32_mpeg.h"

#include <array>

namespace rill::protocol {
namespace {

// Byte-wise table for the non-reflected polynomial 0x04C11DB7, computed at compile time.
constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i << 24;
    for (int bit = 0; bit < 8; ++bit) c = (c & 0x80000000u) ? (c << 1) ^ 0x04C11DB7u : (c << 1);
    t[i] = c;
  }
  return t;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t crc32_mpeg2(std::span<const uint8_t> bytes, uint32_t crc) {
  for (uint8_t b : bytes) crc = (crc << 8) ^ kTable[((crc >> 24) ^ b) & 0xFFu];
  return crc;
}

}  // namespace rill::protocol
