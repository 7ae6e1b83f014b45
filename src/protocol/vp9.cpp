#include "rill/protocol/vp9.h"

#include <algorithm>
#include <string>

#include "rill/protocol/bit_reader.h"
#include "rill/protocol/error.h"

namespace rill::protocol {

VpcConfig parse_vpc_config(std::span<const uint8_t> record) {
  if (record.size() >= 4 && record[0] == 1 && record[1] == 0 && record[2] == 0 && record[3] == 0)
    record = record.subspan(4);  // vpcC FullBox version 1, flags 0
  // VPCodecConfigurationRecord (binding §2.3.3): profile u8, level u8, bitDepth u(4),
  // chromaSubsampling u(3), videoFullRangeFlag u(1), colourPrimaries u8, transferCharacteristics
  // u8, matrixCoefficients u8, codecIntializationDataSize u16, codecIntializationData.
  if (record.size() < kVpcConfigFixedSize) {
    throw ProtocolError("vpcC: " + std::to_string(record.size()) + " bytes, expected at least 8");
  }
  VpcConfig c;
  c.profile = record[0];
  c.level = record[1];
  c.bit_depth = record[2] >> 4;
  c.chroma_subsampling = (record[2] >> 1) & 0x07;
  c.video_full_range = record[2] & 0x01;
  c.colour_primaries = record[3];
  c.transfer_characteristics = record[4];
  c.matrix_coefficients = record[5];
  const size_t init_size = (size_t{record[6]} << 8) | record[7];
  if (kVpcConfigFixedSize + init_size > record.size()) {
    throw ProtocolError("vpcC: codecIntializationDataSize " + std::to_string(init_size) +
                        " past the record's " + std::to_string(record.size()) + " bytes");
  }
  if (c.bit_depth != 8 && c.bit_depth != 10 && c.bit_depth != 12) {
    throw ProtocolError("vpcC: bit depth " + std::to_string(c.bit_depth) + ", expected 8, 10 or 12");
  }
  c.codec_initialization_data.assign(record.begin() + kVpcConfigFixedSize,
                                     record.begin() + kVpcConfigFixedSize + init_size);
  return c;
}

std::optional<Vp9FrameSize> vp9_key_frame_size(std::span<const uint8_t> frame) {
  // uncompressed_header() (VP9 §6.2) up to frame_size().
  BitReader br(frame, "VP9 frame header");
  if (br.bits(2, "frame_marker") != 2) throw ProtocolError("VP9 frame header: frame_marker is not 2");
  const uint32_t low = br.bits(1, "profile_low_bit");
  const uint32_t profile = (br.bits(1, "profile_high_bit") << 1) | low;
  if (profile == 3) br.bits(1, "reserved_zero");
  if (br.flag("show_existing_frame")) return std::nullopt;
  if (br.bits(1, "frame_type") != 0) return std::nullopt;  // 0: KEY_FRAME
  br.bits(1, "show_frame");
  br.bits(1, "error_resilient_mode");
  if (br.bits(24, "frame_sync_code") != 0x498342)
    throw ProtocolError("VP9 frame header: wrong frame_sync_code");
  // color_config() (§6.2.2)
  if (profile >= 2) br.bits(1, "ten_or_twelve_bit");
  constexpr uint32_t kCsRgb = 7;
  if (br.bits(3, "color_space") != kCsRgb) {
    br.bits(1, "color_range");
    if (profile == 1 || profile == 3) br.bits(3, "subsampling_x, subsampling_y, reserved_zero");
  } else if (profile == 1 || profile == 3) {
    br.bits(1, "reserved_zero");
  }
  Vp9FrameSize s;
  s.width = br.bits(16, "frame_width_minus_1") + 1;
  s.height = br.bits(16, "frame_height_minus_1") + 1;
  return s;
}

std::vector<uint8_t> write_vpc_config(const VpcConfig& c) {
  const size_t init_size = c.codec_initialization_data.size();
  std::vector<uint8_t> out(kVpcConfigFixedSize + init_size);
  out[0] = c.profile;
  out[1] = c.level;
  out[2] = static_cast<uint8_t>((c.bit_depth << 4) | ((c.chroma_subsampling & 0x07) << 1) |
                                (c.video_full_range ? 1 : 0));
  out[3] = c.colour_primaries;
  out[4] = c.transfer_characteristics;
  out[5] = c.matrix_coefficients;
  out[6] = static_cast<uint8_t>(init_size >> 8);
  out[7] = static_cast<uint8_t>(init_size & 0xFF);
  std::copy(c.codec_initialization_data.begin(), c.codec_initialization_data.end(),
            out.begin() + kVpcConfigFixedSize);
  return out;
}

}  // namespace rill::protocol
