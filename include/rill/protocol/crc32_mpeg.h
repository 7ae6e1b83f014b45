#pragma once
// CRC-32/MPEG-2, the CRC of every MPEG-TS PSI section (ISO/IEC 13818-1 Annex A, 2.4.4.x CRC_32):
// polynomial 0x04C11DB7, initial value 0xFFFFFFFF, MSB first (no reflection), no final XOR.
// A section followed by its own CRC_32 yields 0 ("zero output of the registers in the decoder").
#include <cstddef>
#include <cstdint>
#include <span>

namespace rill::protocol {

// CRC of `bytes`; pass a previous result as `crc` to continue a running computation.
uint32_t crc32_mpeg2(std::span<const uint8_t> bytes, uint32_t crc = 0xFFFFFFFFu);

}  // namespace rill::protocol
