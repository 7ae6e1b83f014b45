#pragma once
// H.265/HEVC helpers: the HEVCDecoderConfigurationRecord (ISO/IEC 14496-15 §8.3.3.1, the body of
// an E-RTMP hvc1 SequenceStart and of an MP4 hvcC box) and the Annex B access unit an MPEG-TS
// carries (stream_type 0x24, ISO/IEC 13818-1 §2.17): AUD, VPS/SPS/PPS before an IRAP picture,
// then the sample's NAL units. Pure bytes; malformed input throws ProtocolError.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rill::protocol {

// nal_unit_type values used here (H.265 Table 7-1).
namespace hevc_nal {
inline constexpr uint8_t kBlaWLp = 16;   // IRAP pictures: 16..23
inline constexpr uint8_t kRsvIrap23 = 23;
inline constexpr uint8_t kVps = 32;
inline constexpr uint8_t kSps = 33;
inline constexpr uint8_t kPps = 34;
inline constexpr uint8_t kAud = 35;
}  // namespace hevc_nal

// nal_unit_type of a NAL unit (its first header byte).
inline uint8_t hevc_nal_type(uint8_t header0) { return static_cast<uint8_t>((header0 >> 1) & 0x3F); }

struct HevcConfig {
  uint8_t general_profile_space = 0;
  bool general_tier_flag = false;
  uint8_t general_profile_idc = 0;
  uint32_t general_profile_compatibility_flags = 0;
  uint8_t general_level_idc = 0;
  uint8_t nalu_length_size = 4;  // lengthSizeMinusOne + 1: 1, 2 or 4
  std::vector<std::vector<uint8_t>> vps, sps, pps;  // NAL units, header included, no prefix
};

// Parses a HEVCDecoderConfigurationRecord. Throws ProtocolError on a configurationVersion other
// than 1, a reserved lengthSizeMinusOne (2), a missing VPS, SPS or PPS, an empty NAL unit or a
// truncated record. Arrays of other NAL types (SEI) are skipped.
HevcConfig parse_hevc_config(std::span<const uint8_t> record);

// Appends one access unit in Annex B form for an MPEG-TS PES: an AUD first (H.265 §7.4.2.4.4:
// the first NAL unit of the access unit when present) unless the sample has one, then the
// config's VPS/SPS/PPS when `keyframe` is set or the sample holds an IRAP picture (unless it
// carries its own), then the sample's NAL units, each behind 00 00 00 01. Throws on a malformed
// sample; `out` is unchanged on throw.
void hevc_to_annexb_access_unit(std::span<const uint8_t> sample, const HevcConfig& config, bool keyframe,
                                std::vector<uint8_t>& out);

}  // namespace rill::protocol
