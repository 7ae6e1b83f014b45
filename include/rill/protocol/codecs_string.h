#pragma once
// The CODECS attribute of an HLS variant (RFC 8216 §4.3.4.2: "formatted as specified in RFC 6381
// §3.3") computed from each track's decoder configuration record: what a multivariant playlist
// names for its renditions, and what a player checks with MediaSource.isTypeSupported.
//
//   H.264   avc1.PPCCLL           profile, constraint flags, level from the AVCDecoderConfigurationRecord
//   HEVC    hvc1.[A-C]P.F.TL.CC   ISO/IEC 14496-15 Annex E.3 from the HEVCDecoderConfigurationRecord
//   AV1     av01.P.LLT.DD         AV1 ISO BMFF binding "Codecs Parameter String" from av1C
//   VP9     vp09.PP.LL.DD         VP codec ISO BMFF binding "Codecs Parameter String" from vpcC
//   AAC     mp4a.40.AOT           RFC 6381 §3.3 from the AudioSpecificConfig
//   Opus    opus                  Opus in ISO BMFF §4.5 (the sample entry, lower case as browsers list it)
//
// Pure bytes; a record that does not parse throws ProtocolError.
#include <cstdint>
#include <span>
#include <string>

namespace rill::protocol {

std::string avc_codecs_string(std::span<const uint8_t> avcc);
std::string hevc_codecs_string(std::span<const uint8_t> hvcc);
std::string av1_codecs_string(std::span<const uint8_t> av1c);
std::string vp9_codecs_string(std::span<const uint8_t> vpcc);
std::string aac_codecs_string(std::span<const uint8_t> asc);
inline std::string opus_codecs_string() { return "opus"; }

// "VIDEO,AUDIO", or the one that is not empty.
std::string join_codecs(const std::string& video, const std::string& audio);

}  // namespace rill::protocol
