#pragma once
// MSB-first bit reader over a byte span, for the bit-packed headers of AV1 and VP9. Reading past
// the end throws ProtocolError naming `what` (the structure being read) and the field.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "rill/protocol/error.h"

namespace rill::protocol {

class BitReader {
 public:
  BitReader(std::span<const uint8_t> bytes, const char* what) : b_(bytes), what_(what) {}

  // n <= 32 bits, big-endian bit order ("f(n)" in the AV1 specification).
  uint32_t bits(int n, const char* field) {
    if (b_.size() * 8 - pos_ < static_cast<size_t>(n)) {
      throw ProtocolError(std::string(what_) + ": truncated at " + field + " (bit " + std::to_string(pos_) +
                          " of " + std::to_string(b_.size() * 8) + ")");
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i, ++pos_) v = (v << 1) | ((b_[pos_ >> 3] >> (7 - (pos_ & 7))) & 1u);
    return static_cast<uint32_t>(v);
  }
  bool flag(const char* field) { return bits(1, field) != 0; }
  size_t position() const { return pos_; }

 private:
  std::span<const uint8_t> b_;
  const char* what_;
  size_t pos_ = 0;
};

}  // namespace rill::protocol
