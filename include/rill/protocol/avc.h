#pragma once
// H.264/AVC helpers: the AVCDecoderConfigurationRecord (ISO/IEC 14496-15 5.3.3.1, the payload of
// an FLV "AVC sequence header"), AVCC (length-prefixed NAL units, 14496-15 5.3.4.2) to Annex B
// (start-code prefixed, ITU-T H.264 Annex B) conversion, and an SPS reader for the picture size
// (H.264 7.3.2.1.1). Pure bytes in, bytes out; malformed input throws ProtocolError.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rill::protocol {

// nal_unit_type values used here (H.264 Table 7-1).
namespace avc_nal {
inline constexpr uint8_t kSlice = 1;
inline constexpr uint8_t kIdr = 5;
inline constexpr uint8_t kSei = 6;
inline constexpr uint8_t kSps = 7;
inline constexpr uint8_t kPps = 8;
inline constexpr uint8_t kAud = 9;
}  // namespace avc_nal

struct AvcConfig {
  uint8_t profile = 0;  // AVCProfileIndication
  uint8_t profile_compatibility = 0;
  uint8_t level = 0;                      // AVCLevelIndication
  uint8_t nalu_length_size = 4;           // lengthSizeMinusOne + 1: 1, 2 or 4
  std::vector<std::vector<uint8_t>> sps;  // NAL units, header byte included, no prefix
  std::vector<std::vector<uint8_t>> pps;
};

// Parses an AVCDecoderConfigurationRecord. Throws ProtocolError on a wrong configurationVersion,
// a reserved lengthSizeMinusOne (2), an empty parameter set or a truncated record. Trailing bytes
// (the High-profile chroma/bit-depth extension) are ignored.
AvcConfig parse_avc_config(std::span<const uint8_t> record);

struct AvcSpsInfo {
  uint8_t profile_idc = 0;
  uint8_t level_idc = 0;
  uint32_t width = 0;  // luma samples after frame cropping
  uint32_t height = 0;
};

// Reads profile, level and the cropped picture size from an SPS NAL unit (header byte included,
// emulation-prevention bytes still in place). Throws ProtocolError on malformed or truncated input.
AvcSpsInfo parse_avc_sps(std::span<const uint8_t> sps_nal);

// Calls f(std::span<const uint8_t> nal) for each NAL unit of an AVCC sample, in order, skipping
// zero-length units. Validates the whole sample before the first call: a length field that runs
// past the end (or a partial length field) throws ProtocolError and f is never called.
template <class F>
void for_each_avcc_nalu(std::span<const uint8_t> sample, uint8_t length_size, F&& f);

// Appends the sample's NAL units to `out`, each prefixed by 00 00 00 01. Throws as above;
// `out` is unchanged on throw.
void avcc_to_annexb(std::span<const uint8_t> sample, uint8_t length_size, std::vector<uint8_t>& out);

// Appends one access unit in Annex B form ready for an MPEG-TS PES (the form ISO/IEC 13818-1
// 2.14 and Apple HLS expect): an access unit delimiter first unless the sample has one
// (H.264 7.4.1.2.3: the AUD, when present, is the first NAL unit of the access unit), then,
// when `keyframe` is set or the sample holds an IDR slice, the config's SPS/PPS unless the
// sample carries its own, then the sample's NAL units. Throws as above; `out` is unchanged on throw.
void avcc_to_annexb_access_unit(std::span<const uint8_t> sample, const AvcConfig& config, bool keyframe,
                                std::vector<uint8_t>& out);

// The same access unit without copying the sample, where that is possible: when the sample's NAL
// lengths are 4 bytes, none is zero, and no parameter set goes in after an AUD of the sample's
// own, the Annex B form is a prefix (the AUD and parameter sets the function above would add)
// followed by the sample itself with each length field read as a start code 00 00 00 01. Then
// appends that prefix to `out` and returns true; otherwise returns false and leaves `out` as is
// (the caller uses avcc_to_annexb_access_unit). Throws as above.
bool avcc_annexb_prefix(std::span<const uint8_t> sample, const AvcConfig& config, bool keyframe,
                        std::vector<uint8_t>& out);

// ---- implementation of the template ----
namespace detail {
[[noreturn]] void throw_avcc_error(size_t offset, size_t need, size_t have);
void check_avcc_length_size(uint8_t length_size);
}  // namespace detail

template <class F>
void for_each_avcc_nalu(std::span<const uint8_t> sample, uint8_t length_size, F&& f) {
  detail::check_avcc_length_size(length_size);
  const uint8_t* p = sample.data();
  const size_t n = sample.size();
  for (int pass = 0; pass < 2; ++pass) {  // pass 0 validates, pass 1 delivers
    size_t off = 0;
    while (off < n) {
      if (n - off < length_size) detail::throw_avcc_error(off, length_size, n - off);
      size_t len = 0;
      for (uint8_t i = 0; i < length_size; ++i) len = (len << 8) | p[off + i];
      off += length_size;
      if (len > n - off) detail::throw_avcc_error(off, len, n - off);
      if (pass == 1 && len > 0) f(sample.subspan(off, len));
      off += len;
    }
  }
}

}  // namespace rill::protocol
