#include "rill/protocol/stream_summary.h"

#include "rill/protocol/aac.h"
#include "rill/protocol/avc.h"
#include "rill/protocol/error.h"
#include "rill/protocol/flv_tag.h"
#include "rill/protocol/opus.h"

namespace rill::protocol {

namespace {

const char* video_codec_name(FlvVideoCodec c) {
  switch (c) {
    case FlvVideoCodec::H264:
      return "h264";
    case FlvVideoCodec::HEVC:
      return "hevc";
    case FlvVideoCodec::AV1:
      return "av1";
    case FlvVideoCodec::VP9:
      return "vp9";
    case FlvVideoCodec::Other:
      break;
  }
  return "unknown";
}

// ISO/IEC 14496-3 Table 1.17 (audio object types), the ones encoders send.
std::string aac_profile_name(const AacConfig& c) {
  if (c.ps) return "HE-AACv2";
  if (c.sbr) return "HE-AAC";
  switch (c.object_type) {
    case 1:
      return "Main";
    case 2:
      return "LC";
    case 3:
      return "SSR";
    case 4:
      return "LTP";
    case 5:
      return "HE-AAC";
    case 29:
      return "HE-AACv2";
    default:
      return "";
  }
}

// FLV E.4.2.1 SoundRate (legacy): 5.5, 11, 22, 44 kHz.
uint32_t legacy_sound_rate(uint8_t bits) {
  static constexpr uint32_t kRates[4] = {5512, 11025, 22050, 44100};
  return kRates[bits & 3];
}

}  // namespace

std::string avc_profile_name(uint8_t profile_idc, uint8_t constraint_flags) {
  const bool set1 = (constraint_flags & 0x40) != 0;  // constraint_set1_flag
  const bool set3 = (constraint_flags & 0x10) != 0;  // constraint_set3_flag
  switch (profile_idc) {
    case 66:
      return set1 ? "Constrained Baseline" : "Baseline";
    case 77:
      return "Main";
    case 88:
      return "Extended";
    case 100:
      return "High";
    case 110:
      return set3 ? "High 10 Intra" : "High 10";
    case 122:
      return set3 ? "High 4:2:2 Intra" : "High 4:2:2";
    case 244:
      return set3 ? "High 4:4:4 Intra" : "High 4:4:4 Predictive";
    case 44:
      return "CAVLC 4:4:4";
    default:
      return "profile " + std::to_string(profile_idc);
  }
}

std::string avc_level_name(uint8_t level_idc, uint8_t constraint_flags, uint8_t profile_idc) {
  // A.3.1: level 1b is level_idc 11 with constraint_set3 in Baseline/Main/Extended, or 9.
  const bool set3 = (constraint_flags & 0x10) != 0;
  if (level_idc == 9 ||
      (level_idc == 11 && set3 && (profile_idc == 66 || profile_idc == 77 || profile_idc == 88))) {
    return "1b";
  }
  return std::to_string(level_idc / 10) + "." + std::to_string(level_idc % 10);
}

std::optional<VideoSummary> summarize_video_header(std::span<const uint8_t> body) {
  try {
    const VideoTagInfo tag = parse_video_tag(body);
    if (!tag.is_sequence_header) return std::nullopt;
    VideoSummary v;
    v.codec = video_codec_name(tag.codec);
    if (tag.codec != FlvVideoCodec::H264) return v;
    const AvcConfig cfg = parse_avc_config(body.subspan(tag.payload_offset));
    if (cfg.sps.empty()) return v;  // a record without an SPS: the codec name is all we know
    const AvcSpsInfo sps = parse_avc_sps(cfg.sps.front());
    v.width = sps.width;
    v.height = sps.height;
    v.profile = avc_profile_name(sps.profile_idc, cfg.profile_compatibility);
    v.level = avc_level_name(sps.level_idc, cfg.profile_compatibility, sps.profile_idc);
    return v;
  } catch (const ProtocolError&) {
    return std::nullopt;
  }
}

std::optional<AudioSummary> summarize_audio_header(std::span<const uint8_t> body) {
  try {
    const AudioTagInfo tag = parse_audio_tag(body);
    AudioSummary a;
    if (tag.codec == FlvAudioCodec::AAC) {
      if (!tag.is_sequence_header) return std::nullopt;
      const AacConfig cfg = parse_aac_config(body.subspan(tag.payload_offset));
      a.codec = "aac";
      a.sample_rate =
          cfg.extension_sampling_frequency ? cfg.extension_sampling_frequency : cfg.sampling_frequency;
      a.channels = cfg.ps ? 2 : cfg.channel_config;  // PS: a mono core decoded to stereo
      a.profile = aac_profile_name(cfg);
      return a;
    }
    if (tag.codec == FlvAudioCodec::Opus) {
      if (!tag.is_sequence_header) return std::nullopt;
      const OpusConfig cfg = parse_opus_head(body.subspan(tag.payload_offset));
      a.codec = "opus";
      a.sample_rate = kOpusTimescale;  // Opus decodes at 48 kHz whatever the input rate was
      a.channels = cfg.channels;
      return a;
    }
    if (tag.is_enhanced) return std::nullopt;  // other E-RTMP audio: not summarized yet
    a.codec = tag.codec == FlvAudioCodec::MP3 ? "mp3" : "unknown";
    a.sample_rate = tag.sound_format == kSoundFormatMp3_8k ? 8000 : legacy_sound_rate(tag.sound_rate);
    a.channels = tag.sound_type ? 2 : 1;
    return a;
  } catch (const ProtocolError&) {
    return std::nullopt;
  }
}

}  // namespace rill::protocol
