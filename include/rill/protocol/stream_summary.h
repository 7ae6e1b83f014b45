#pragma once
// What a stream carries, read from the sequence headers it holds (FLV tag bodies): the codec,
// picture size, profile and level of its video; the codec, sample rate and channels of its audio.
// The control plane shows these (docs/api.md). Pure bytes: no socket, no clock.
//
//   summarize_video_header(body)   AVC: AVCDecoderConfigurationRecord (ISO/IEC 14496-15 §5.3.3)
//                                  and its first SPS (ITU-T H.264 §7.3.2.1.1): size, profile, level;
//                                  other codecs: the codec name alone
//   summarize_audio_header(body)   AAC: AudioSpecificConfig (ISO/IEC 14496-3 §1.6.2.1);
//                                  MP3 and others: the legacy FLV SoundRate / SoundType bits
//
// Codec names are ffprobe's codec_name ("h264", "hevc", "av1", "vp9", "aac", "mp3"), profiles its
// profile names ("High", "Constrained Baseline", "LC"), levels the dotted form ("3.1").
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace rill::protocol {

struct VideoSummary {
  std::string codec;    // "h264", "hevc", "av1", "vp9", "unknown"
  uint32_t width = 0;   // 0 when not known (only AVC is parsed this far)
  uint32_t height = 0;
  std::string profile;  // "" when not known
  std::string level;    // "" when not known
  bool operator==(const VideoSummary&) const = default;
};

struct AudioSummary {
  std::string codec;          // "aac", "mp3", "unknown"
  uint32_t sample_rate = 0;   // Hz
  uint32_t channels = 0;      // 0 when not known (AAC channelConfiguration 0: a PCE decides)
  std::string profile;        // AAC: "LC", "HE-AAC", "HE-AACv2", "Main", ...; else ""
  bool operator==(const AudioSummary&) const = default;
};

// nullopt when the body is not a sequence header or cannot be parsed (never throws).
std::optional<VideoSummary> summarize_video_header(std::span<const uint8_t> tag_body);
std::optional<AudioSummary> summarize_audio_header(std::span<const uint8_t> tag_body);

// H.264 Annex A profile name of profile_idc, with constraint_set1 for Constrained Baseline.
std::string avc_profile_name(uint8_t profile_idc, uint8_t constraint_flags);
// level_idc 31 -> "3.1"; 9 or level 11 with constraint_set3 -> "1b" (Annex A.3.1).
std::string avc_level_name(uint8_t level_idc, uint8_t constraint_flags, uint8_t profile_idc);

}  // namespace rill::protocol
