#pragma once
// VP9 helpers: the VPCodecConfigurationRecord ("VP Codec ISO Media File Format Binding" §2.3.3,
// the body of an MP4 vpcC box after its FullBox version and flags, and of an E-RTMP vp09
// SequenceStart). Pure bytes; malformed input throws ProtocolError.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace rill::protocol {

struct VpcConfig {
  uint8_t profile = 0;
  uint8_t level = 0;      // "level ... as defined in the VP9 levels table": 31 is level 3.1
  uint8_t bit_depth = 8;  // 8, 10 or 12
  uint8_t chroma_subsampling = 0;
  bool video_full_range = false;
  uint8_t colour_primaries = 1;
  uint8_t transfer_characteristics = 1;
  uint8_t matrix_coefficients = 1;
  std::vector<uint8_t> codec_initialization_data;  // "SHALL be empty for VP8 and VP9"
};

inline constexpr size_t kVpcConfigFixedSize = 8;

// Parses a VPCodecConfigurationRecord. E-RTMP senders differ on whether the vpcC box's version
// (1) and flags (0) come first (ffmpeg's FLV muxer writes them): a body that begins 01 00 00 00
// is read as that form (a plain record cannot: level 0 is no VP9 level). Throws ProtocolError when
// truncated or when the bit depth is not 8, 10 or 12.
VpcConfig parse_vpc_config(std::span<const uint8_t> record);

struct Vp9FrameSize {
  uint32_t width = 0, height = 0;
};

// The frame size of a VP9 key frame, from its uncompressed header (VP9 bitstream specification
// §6.2, frame_size()); std::nullopt for a frame that is not a key frame. Throws ProtocolError
// when truncated, or when the frame marker or the key frame sync code is wrong.
std::optional<Vp9FrameSize> vp9_key_frame_size(std::span<const uint8_t> frame);

// The record in its plain form (no version and flags): what follows the FullBox header of vpcC.
std::vector<uint8_t> write_vpc_config(const VpcConfig& c);

}  // namespace rill::protocol
