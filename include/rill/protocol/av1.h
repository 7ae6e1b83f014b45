#pragma once
// AV1 helpers: the AV1CodecConfigurationRecord ("AV1 Codec ISO Media File Format Binding" §2.3.3,
// the body of an MP4 av1C box and of an E-RTMP av01 SequenceStart) and the temporal unit an MP4
// sample holds. Pure bytes; malformed input throws ProtocolError.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rill::protocol {

struct Av1Config {
  uint8_t seq_profile = 0;      // 0 Main, 1 High, 2 Professional
  uint8_t seq_level_idx_0 = 0;  // level index of operating point 0 (AV1 Annex A.3: 8 = level 4.0)
  bool seq_tier_0 = false;      // high tier
  bool high_bitdepth = false;
  bool twelve_bit = false;
  bool monochrome = false;
  bool chroma_subsampling_x = false;
  bool chroma_subsampling_y = false;
  uint8_t chroma_sample_position = 0;
  std::vector<uint8_t> config_obus;  // configOBUs: the sequence header OBU (and metadata OBUs), if sent

  uint8_t bit_depth() const { return high_bitdepth ? (twelve_bit ? 12 : 10) : 8; }
};

inline constexpr size_t kAv1ConfigFixedSize = 4;

// Parses an AV1CodecConfigurationRecord. Throws ProtocolError when shorter than its 4 fixed bytes,
// when marker is not 1 or version not 1 (§2.3.3: "marker SHALL be set to 1", "version SHALL be
// set to 1").
Av1Config parse_av1_config(std::span<const uint8_t> record);

struct Av1FrameSize {
  uint32_t width = 0, height = 0;  // max_frame_width/height of the sequence header
};

// The frame size a sequence header OBU (AV1 §5.5.1) declares, from the first OBU_SEQUENCE_HEADER
// among `obus` (low-overhead OBUs with size fields: configOBUs or a temporal unit). Throws
// ProtocolError when there is none or it is truncated.
Av1FrameSize av1_frame_size(std::span<const uint8_t> obus);

// The record's fixed fields (profile, level and tier of operating point 0, color_config) from the
// first sequence header OBU among `obus` (AV1 §5.5); config_obus is left empty. Throws
// ProtocolError when there is none or it is truncated.
Av1Config av1_config_from_sequence_header(std::span<const uint8_t> obus);

// The first sequence header OBU among `obus`, whole (header, obu_size, payload): a view. Throws
// ProtocolError when there is none.
std::span<const uint8_t> av1_sequence_header_obu(std::span<const uint8_t> obus);

// The AV1CodecConfigurationRecord of `c` (its fixed 4 bytes, then config_obus).
std::vector<uint8_t> write_av1_config(const Av1Config& c);

// An MP4 AV1 sample is one temporal unit "with OBU_TEMPORAL_DELIMITER ... SHOULD NOT" present
// (binding §2.4); E-RTMP av01 CodedFrames may begin with one. Returns `temporal_unit` without its
// leading temporal delimiter OBUs (a view; the bytes are not copied). Never throws: a malformed
// OBU header ends the stripping.
std::span<const uint8_t> av1_strip_temporal_delimiters(std::span<const uint8_t> temporal_unit);

}  // namespace rill::protocol
