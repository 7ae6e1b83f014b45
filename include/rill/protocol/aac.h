#pragma once
// AAC helpers: the AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1, the payload of an FLV "AAC
// sequence header") and the ADTS frame header (ISO/IEC 14496-3 1.A.2.2) that MPEG-TS carries
// AAC in (stream_type 0x0F). Pure bytes in, bytes out; malformed input throws ProtocolError.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace rill::protocol {

struct AacConfig {
  // audioObjectType of the core coder (2 = AAC LC). For explicit HE-AAC signalling
  // (object type 5 SBR or 29 PS, 1.6.5.3) this is the underlying object type and `sbr`/`ps` are set.
  uint8_t object_type = 0;
  uint8_t sampling_index = 0;       // 0..12, or 15 when the frequency is explicit
  uint32_t sampling_frequency = 0;  // Hz, from Table 1.18 or the explicit 24-bit value
  uint8_t channel_config = 0;       // channelConfiguration; 0 = defined by a PCE
  bool sbr = false;
  bool ps = false;
  uint32_t extension_sampling_frequency = 0;  // SBR output rate when signalled explicitly
};

// Parses the leading fields of an AudioSpecificConfig. Throws ProtocolError when truncated or
// when a sampling index is reserved (13, 14). Bytes past the fields read are ignored.
AacConfig parse_aac_config(std::span<const uint8_t> asc);

// The 4-bit samplingFrequencyIndex for a frequency of Table 1.18, or -1.
int aac_sampling_index_for(uint32_t frequency);

inline constexpr size_t kAdtsHeaderSize = 7;
// Largest raw_data_block that fits the 13-bit aac_frame_length together with the header.
inline constexpr size_t kAdtsMaxPayload = 8191 - kAdtsHeaderSize;

// Throws ProtocolError when `config` cannot be carried in ADTS: profile is 2 bits (object
// types 1..4), the sampling index must not be the escape value (an explicit frequency is mapped
// to its table index when it has one), channel configuration must be 1..7.
void check_adts_compatible(const AacConfig& config);

// A 7-byte ADTS header (protection_absent = 1, no CRC) for one raw AAC access unit of
// `payload_size` bytes; aac_frame_length includes the header. Throws ProtocolError as
// check_adts_compatible does, or when payload_size > kAdtsMaxPayload.
std::array<uint8_t, kAdtsHeaderSize> make_adts_header(const AacConfig& config, size_t payload_size);

// Rewrites the aac_frame_length (13 bits, the header included) of an ADTS header made by
// make_adts_header for another payload size: the header of the next frame of the same
// configuration without working out its fixed fields again. payload_size <= kAdtsMaxPayload.
inline void set_adts_frame_length(uint8_t* header, size_t payload_size) {
  const auto len = static_cast<uint32_t>(payload_size + kAdtsHeaderSize);
  header[3] = static_cast<uint8_t>((header[3] & 0xFC) | (len >> 11));
  header[4] = static_cast<uint8_t>((len >> 3) & 0xFF);
  header[5] = static_cast<uint8_t>(((len & 7) << 5) | 0x1F);
}

}  // namespace rill::protocol
