#include "rill/protocol/aac.h"

#include <string>

#include "rill/protocol/error.h"

namespace rill::protocol {
namespace {

// ISO/IEC 14496-3 Table 1.18, samplingFrequencyIndex 0x0..0xC (0xD, 0xE reserved, 0xF escape).
constexpr uint32_t kFrequencies[13] = {96000, 88200, 64000, 48000, 44100, 32000, 24000,
                                       22050, 16000, 12000, 11025, 8000,  7350};

class BitReader {
 public:
  explicit BitReader(std::span<const uint8_t> b) : b_(b) {}
  uint32_t bits(int n, const char* field) {
    if (b_.size() * 8 - pos_ < static_cast<size_t>(n))
      throw ProtocolError(std::string("AudioSpecificConfig: truncated at ") + field + " (bit " +
                          std::to_string(pos_) + " of " + std::to_string(b_.size() * 8) + ")");
    uint32_t v = 0;
    for (int i = 0; i < n; ++i, ++pos_) v = (v << 1) | ((b_[pos_ >> 3] >> (7 - (pos_ & 7))) & 1u);
    return v;
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

// GetAudioObjectType() (1.6.2.1): 5 bits, 31 escapes to 32 + 6 bits.
uint8_t read_object_type(BitReader& br) {
  uint32_t t = br.bits(5, "audioObjectType");
  if (t == 31) t = 32 + br.bits(6, "audioObjectTypeExt");
  return static_cast<uint8_t>(t);
}

// samplingFrequencyIndex, with the 24-bit samplingFrequency after the escape value 0xF.
uint32_t read_frequency(BitReader& br, uint8_t& index, const char* field) {
  index = static_cast<uint8_t>(br.bits(4, field));
  if (index == 0xF) {
    uint32_t f = br.bits(24, "samplingFrequency");
    if (f == 0) throw ProtocolError("AudioSpecificConfig: explicit samplingFrequency is 0");
    return f;
  }
  if (index >= 13)
    throw ProtocolError(std::string("AudioSpecificConfig: reserved ") + field + " " + std::to_string(index));
  return kFrequencies[index];
}

}  // namespace

int aac_sampling_index_for(uint32_t frequency) {
  for (int i = 0; i < 13; ++i)
    if (kFrequencies[i] == frequency) return i;
  return -1;
}

AacConfig parse_aac_config(std::span<const uint8_t> asc) {
  BitReader br(asc);
  AacConfig c;
  c.object_type = read_object_type(br);
  if (c.object_type == 0) throw ProtocolError("AudioSpecificConfig: audioObjectType 0 (null)");
  c.sampling_frequency = read_frequency(br, c.sampling_index, "samplingFrequencyIndex");
  c.channel_config = static_cast<uint8_t>(br.bits(4, "channelConfiguration"));
  // Explicit hierarchical SBR/PS signalling (1.6.2.1): extension frequency, then the core type.
  if (c.object_type == 5 || c.object_type == 29) {
    c.sbr = true;
    c.ps = c.object_type == 29;
    uint8_t ext_index = 0;
    c.extension_sampling_frequency = read_frequency(br, ext_index, "extensionSamplingFrequencyIndex");
    c.object_type = read_object_type(br);
    if (c.object_type == 0 || c.object_type == 5 || c.object_type == 29)
      throw ProtocolError("AudioSpecificConfig: invalid core audioObjectType " +
                          std::to_string(c.object_type) + " under SBR/PS");
  }
  return c;
}

void check_adts_compatible(const AacConfig& c) {
  if (c.object_type < 1 || c.object_type > 4)
    throw ProtocolError("ADTS: audioObjectType " + std::to_string(c.object_type) +
                        " not representable (profile field covers object types 1..4)");
  int index = c.sampling_index == 0xF ? aac_sampling_index_for(c.sampling_frequency) : c.sampling_index;
  if (index < 0 || index >= 13)
    throw ProtocolError("ADTS: sampling frequency " + std::to_string(c.sampling_frequency) +
                        " Hz has no samplingFrequencyIndex");
  if (c.channel_config < 1 || c.channel_config > 7)
    throw ProtocolError("ADTS: channelConfiguration " + std::to_string(c.channel_config) +
                        " not supported (expected 1..7)");
}

std::array<uint8_t, kAdtsHeaderSize> make_adts_header(const AacConfig& c, size_t payload_size) {
  check_adts_compatible(c);
  if (payload_size > kAdtsMaxPayload)
    throw ProtocolError("ADTS: access unit of " + std::to_string(payload_size) +
                        " bytes exceeds aac_frame_length limit " + std::to_string(kAdtsMaxPayload));
  const uint32_t profile = c.object_type - 1u;  // 1.A.2.2.1: profile_ObjectType
  const uint32_t sfi = static_cast<uint32_t>(
      c.sampling_index == 0xF ? aac_sampling_index_for(c.sampling_frequency) : c.sampling_index);
  const uint32_t ch = c.channel_config;
  // adts_fixed_header: syncword 0xFFF, ID 0 (MPEG-4), layer 00, protection_absent 1,
  // profile(2) sampling_frequency_index(4) private_bit(1) channel_configuration(3)
  // original_copy(1) home(1); adts_variable_header: copyright bits(2), aac_frame_length(13),
  // adts_buffer_fullness(11) = 0x7FF (VBR), number_of_raw_data_blocks_in_frame(2) = 0.
  std::array<uint8_t, kAdtsHeaderSize> h = {0xFF,
                                            0xF1,
                                            static_cast<uint8_t>((profile << 6) | (sfi << 2) | (ch >> 2)),
                                            static_cast<uint8_t>((ch & 3) << 6),
                                            0,
                                            0,
                                            0xFC};
  set_adts_frame_length(h.data(), payload_size);
  return h;
}

}  // namespace rill::protocol
