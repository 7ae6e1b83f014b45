#include "rill/protocol/codecs_string.h"

#include <cstdio>

#include "rill/protocol/aac.h"
#include "rill/protocol/av1.h"
#include "rill/protocol/avc.h"
#include "rill/protocol/error.h"
#include "rill/protocol/hevc.h"
#include "rill/protocol/vp9.h"

namespace rill::protocol {

namespace {

std::string format(const char* fmt, auto... args) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, fmt, args...);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

// hvcC's general_constraint_indicator_flags: bytes 6..11 of the record (14496-15 §8.3.3.1).
constexpr size_t kHvccConstraintsAt = 6;

}  // namespace

std::string avc_codecs_string(std::span<const uint8_t> avcc) {
  // RFC 6381 §3.3: "avc1.PPCCLL": profile_idc, the constraint_set flags byte and level_idc, hex.
  const AvcConfig c = parse_avc_config(avcc);
  return format("avc1.%02X%02X%02X", c.profile, c.profile_compatibility, c.level);
}

std::string hevc_codecs_string(std::span<const uint8_t> hvcc) {
  // ISO/IEC 14496-15 E.3: general_profile_space as "", "A", "B", "C" before general_profile_idc
  // (decimal); general_profile_compatibility_flags in reverse bit order, hex without leading
  // zeros; "L" or "H" (tier) and general_level_idc (decimal); then the six constraint bytes,
  // hex, each behind a ".", trailing zero bytes omitted.
  const HevcConfig c = parse_hevc_config(hvcc);
  uint32_t reversed = 0;
  for (int i = 0; i < 32; ++i) {
    if (c.general_profile_compatibility_flags & (1u << i)) reversed |= 1u << (31 - i);
  }
  std::string s = "hvc1.";
  if (c.general_profile_space > 0) s += static_cast<char>('A' + c.general_profile_space - 1);
  s += std::to_string(c.general_profile_idc) + format(".%X.", reversed) + (c.general_tier_flag ? "H" : "L") +
       std::to_string(c.general_level_idc);
  size_t last = kHvccConstraintsAt + 6;
  while (last > kHvccConstraintsAt && hvcc[last - 1] == 0) --last;
  for (size_t i = kHvccConstraintsAt; i < last; ++i) s += format(".%X", hvcc[i]);
  return s;
}

std::string av1_codecs_string(std::span<const uint8_t> av1c) {
  // AV1 binding, "Codecs Parameter String": <sample entry>.<profile>.<level><tier>.<bitDepth>,
  // level two digits, tier "M" (Main) or "H" (High), bit depth two digits; the optional fields
  // after it are left out ("all of them ... or none").
  const Av1Config c = parse_av1_config(av1c);
  return format("av01.%u.%02u%c.%02u", unsigned{c.seq_profile}, unsigned{c.seq_level_idx_0},
                c.seq_tier_0 ? 'H' : 'M', unsigned{c.bit_depth()});
}

std::string vp9_codecs_string(std::span<const uint8_t> vpcc) {
  // VP codec binding, "Codecs Parameter String": <sample entry>.<profile>.<level>.<bitDepth>, each
  // two digits (the optional fields after them are left out).
  const VpcConfig c = parse_vpc_config(vpcc);
  return format("vp09.%02u.%02u.%02u", unsigned{c.profile}, unsigned{c.level}, unsigned{c.bit_depth});
}

std::string aac_codecs_string(std::span<const uint8_t> asc) {
  // RFC 6381 §3.3: "mp4a.40.AOT", objectTypeIndication 0x40 (MPEG-4 audio) and the first
  // audioObjectType of the AudioSpecificConfig: 5 (SBR) and 29 (PS) for explicit HE-AAC.
  const AacConfig c = parse_aac_config(asc);
  const unsigned aot = c.ps ? 29 : c.sbr ? 5 : c.object_type;
  return "mp4a.40." + std::to_string(aot);
}

std::string join_codecs(const std::string& video, const std::string& audio) {
  if (video.empty()) return audio;
  if (audio.empty()) return video;
  return video + "," + audio;
}

}  // namespace rill::protocol
