#include "rill/protocol/flv_tag.h"

#include <string_view>

#include "rill/core/byte_order.h"

namespace rill::protocol {

namespace {

std::string bytes_word(size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

[[noreturn]] void too_short(const char* tag, size_t size, size_t need, const std::string& why) {
  throw ProtocolError(std::string(tag) + ": " + bytes_word(size) + ", expected at least " +
                      std::to_string(need) + " for " + why);
}

uint32_t read_u32(std::span<const uint8_t> b, size_t pos) { return load_be32(b.data() + pos); }

// SI24, big-endian, sign-extended (FLV E.4.3.1 CompositionTime).
int32_t read_si24(std::span<const uint8_t> b, size_t pos) {
  uint32_t v = load_be24(b.data() + pos);
  if (v & 0x800000u) v |= 0xFF000000u;
  return static_cast<int32_t>(v);
}

// E-RTMP v2 ExVideoTagHeader / ExAudioTagHeader: "while (packetType == ModEx) { modExDataSize =
// UI8 + 1; if (modExDataSize == 256) modExDataSize = UI16 + 1; modExData = UI8[modExDataSize];
// packetModExType = UB[4]; packetType = UB[4] }", and "if (packetModExType ==
// TimestampOffsetNano) { timestampNanoOffset = bytesToUI24(modExData) }". Other ModEx types are
// skipped. Each round consumes at least 3 bytes, so the loop is bounded by the body size.
void read_mod_ex(std::span<const uint8_t> body, size_t& pos, uint8_t& packet_type, uint8_t mod_ex,
                 uint32_t& timestamp_offset_ns, const char* tag) {
  while (packet_type == mod_ex) {
    if (pos + 1 > body.size()) too_short(tag, body.size(), pos + 1, "a ModEx data size");
    size_t size = size_t{body[pos]} + 1;
    pos += 1;
    if (size == 256) {
      if (pos + 2 > body.size()) too_short(tag, body.size(), pos + 2, "a 16-bit ModEx data size");
      size = ((size_t{body[pos]} << 8) | body[pos + 1]) + 1;
      pos += 2;
    }
    if (pos + size + 1 > body.size())
      too_short(tag, body.size(), pos + size + 1, "ModEx data and packet type");
    const size_t data_at = pos;
    pos += size;
    const uint8_t mod_ex_type = body[pos] >> 4;
    if (mod_ex_type == kModExTimestampOffsetNano && size >= 3)
      timestamp_offset_ns = load_be24(body.data() + data_at);
    packet_type = body[pos] & 0x0F;
    pos += 1;
  }
}

FlvVideoCodec codec_from_fourcc(uint32_t fourcc) {
  switch (fourcc) {
    case kFourccAvc:
      return FlvVideoCodec::H264;
    case kFourccHevc:
      return FlvVideoCodec::HEVC;
    case kFourccAv1:
      return FlvVideoCodec::AV1;
    case kFourccVp9:
      return FlvVideoCodec::VP9;
    default:
      return FlvVideoCodec::Other;
  }
}

FlvAudioCodec audio_codec_from_fourcc(uint32_t fourcc) {
  switch (fourcc) {
    case kFourccAac:
      return FlvAudioCodec::AAC;
    case kFourccMp3:
      return FlvAudioCodec::MP3;
    case kFourccOpus:
      return FlvAudioCodec::Opus;
    default:
      return FlvAudioCodec::Other;
  }
}

void set_video_flags(VideoTagInfo& info) {
  auto pt = static_cast<ExVideoPacketType>(info.packet_type);
  info.is_sequence_header = pt == ExVideoPacketType::SequenceStart;
  info.is_sequence_end = pt == ExVideoPacketType::SequenceEnd;
  info.is_coded_frame = pt == ExVideoPacketType::CodedFrames || pt == ExVideoPacketType::CodedFramesX;
  info.is_keyframe = info.is_coded_frame && info.frame_type == kVideoFrameKey;
}

VideoTagInfo parse_enhanced_video(std::span<const uint8_t> body) {
  constexpr const char* kTag = "video tag";
  VideoTagInfo info;
  info.is_enhanced = true;
  // E-RTMP v2 ExVideoTagHeader: isExVideoHeader UB[1], videoFrameType UB[3], videoPacketType UB[4].
  info.frame_type = (body[0] >> 4) & 0x07;
  uint8_t packet_type = body[0] & 0x0F;
  size_t pos = 1;
  read_mod_ex(body, pos, packet_type, static_cast<uint8_t>(ExVideoPacketType::ModEx),
              info.timestamp_offset_ns, kTag);
  info.packet_type = packet_type;

  // "if (videoPacketType != Metadata && videoFrameType == Command) { videoCommand = UI8 }":
  // no FourCC and no body follow.
  if (packet_type != static_cast<uint8_t>(ExVideoPacketType::Metadata) &&
      info.frame_type == kVideoFrameCommand) {
    info.is_command_frame = true;
    info.payload_offset = pos;
    return info;
  }

  if (packet_type == static_cast<uint8_t>(ExVideoPacketType::Multitrack)) {
    // "videoMultitrackType = UB[4]; videoPacketType = UB[4]; if (type != ManyTracksManyCodecs)
    // videoFourCc = FOURCC". Tracks follow with per-track ids and sizes: passed through as is.
    info.is_multitrack = true;
    if (pos + 1 > body.size()) too_short(kTag, body.size(), pos + 1, "a multitrack type");
    const uint8_t multitrack_type = body[pos] >> 4;
    info.multitrack_type = multitrack_type;
    info.packet_type = body[pos] & 0x0F;
    pos += 1;
    if (multitrack_type != 2) {
      if (pos + 4 > body.size()) too_short(kTag, body.size(), pos + 4, "a multitrack FourCC");
      info.fourcc = read_u32(body, pos);
      pos += 4;
    }
    set_video_flags(info);
    info.payload_offset = pos;
    return info;  // codec stays Other: the payload is not a single codec's bitstream
  }

  if (pos + 4 > body.size()) too_short(kTag, body.size(), pos + 4, "an enhanced header with FourCC");
  info.fourcc = read_u32(body, pos);
  pos += 4;
  info.codec = codec_from_fourcc(info.fourcc);
  set_video_flags(info);

  // ExVideoTagBody: CodedFrames for avc1 / hvc1 (and vvc1) carries "compositionTimeOffset = SI24";
  // CodedFramesX implies 0; other FourCCs (av01, vp09, vp08) carry none.
  if (packet_type == static_cast<uint8_t>(ExVideoPacketType::CodedFrames) &&
      (info.fourcc == kFourccAvc || info.fourcc == kFourccHevc || info.fourcc == kFourccVvc)) {
    if (pos + 3 > body.size()) {
      too_short(kTag, body.size(), pos + 3,
                fourcc_to_string(info.fourcc) + " CodedFrames (composition time)");
    }
    info.composition_time_ms = read_si24(body, pos);
    pos += 3;
  }
  info.payload_offset = pos;
  return info;
}

bool read_amf_string(std::span<const uint8_t> body, size_t& pos, std::string_view& out) {
  // AMF0 §2.4 string-type = string-marker(0x02) U16 length, UTF-8 bytes.
  if (pos + 3 > body.size() || body[pos] != 0x02) return false;
  size_t len = (size_t{body[pos + 1]} << 8) | body[pos + 2];
  if (pos + 3 + len > body.size()) return false;
  out = std::string_view(reinterpret_cast<const char*>(body.data() + pos + 3), len);
  pos += 3 + len;
  return true;
}

}  // namespace

std::string fourcc_to_string(uint32_t fourcc) {
  std::string s(4, '.');
  for (int i = 0; i < 4; ++i) {
    auto c = static_cast<unsigned char>(fourcc >> (24 - 8 * i));
    if (c >= 0x20 && c < 0x7F) s[i] = static_cast<char>(c);
  }
  return s;
}

const char* to_string(FlvVideoCodec c) {
  switch (c) {
    case FlvVideoCodec::H264:
      return "H.264";
    case FlvVideoCodec::HEVC:
      return "HEVC";
    case FlvVideoCodec::AV1:
      return "AV1";
    case FlvVideoCodec::VP9:
      return "VP9";
    case FlvVideoCodec::Other:
      return "other";
  }
  return "?";
}

const char* to_string(FlvAudioCodec c) {
  switch (c) {
    case FlvAudioCodec::AAC:
      return "AAC";
    case FlvAudioCodec::MP3:
      return "MP3";
    case FlvAudioCodec::Opus:
      return "Opus";
    case FlvAudioCodec::Other:
      return "other";
  }
  return "?";
}

VideoTagInfo parse_video_tag(std::span<const uint8_t> body) {
  if (body.empty()) throw ProtocolError("video tag: 0 bytes, expected at least 1 (frame type and codec)");
  if (body[0] & 0x80) return parse_enhanced_video(body);

  // FLV E.4.3.1 VIDEODATA: FrameType UB[4], CodecID UB[4]; for AVC, AVCPacketType UI8 and
  // CompositionTime SI24 follow.
  VideoTagInfo info;
  info.frame_type = body[0] >> 4;
  info.codec_id = body[0] & 0x0F;
  info.codec = info.codec_id == kVideoCodecIdAvc          ? FlvVideoCodec::H264
               : info.codec_id == kVideoCodecIdHevcLegacy ? FlvVideoCodec::HEVC
                                                          : FlvVideoCodec::Other;
  info.payload_offset = 1;
  // FLV E.4.3.1: "If FrameType = 5, instead of a video payload, the message stream contains a
  // UI8" (video info/command). Such a frame is neither media nor a keyframe.
  if (info.frame_type == kVideoFrameCommand) {
    info.is_command_frame = true;
    return info;
  }
  if (info.codec == FlvVideoCodec::Other) {
    info.is_coded_frame = true;
    info.is_keyframe = info.frame_type == kVideoFrameKey;
    return info;
  }
  if (body.size() < 5) {
    too_short("video tag", body.size(), 5, info.codec == FlvVideoCodec::H264 ? "AVC" : "HEVC (codec id 12)");
  }
  // AVCPacketType: 0 sequence header (AVCDecoderConfigurationRecord), 1 NALUs, 2 end of
  // sequence. "If AVCPacketType != 1, CompositionTime is 0" by the spec; we report what was sent.
  info.packet_type = body[1];
  info.composition_time_ms = read_si24(body, 2);
  info.payload_offset = 5;
  info.is_sequence_header = info.packet_type == 0;
  info.is_coded_frame = info.packet_type == 1;
  info.is_sequence_end = info.packet_type == 2;
  info.is_keyframe = info.is_coded_frame && info.frame_type == kVideoFrameKey;
  return info;
}

AudioTagInfo parse_audio_tag(std::span<const uint8_t> body) {
  constexpr const char* kTag = "audio tag";
  if (body.empty()) throw ProtocolError("audio tag: 0 bytes, expected at least 1 (sound format)");
  AudioTagInfo info;
  info.sound_format = body[0] >> 4;

  if (info.sound_format == kSoundFormatExHeader) {
    // E-RTMP v2 ExAudioTagHeader: soundFormat UB[4] = 9, audioPacketType UB[4], ModEx loop, then
    // Multitrack (audioMultitrackType UB[4], audioPacketType UB[4], FourCC unless
    // ManyTracksManyCodecs) or audioFourCc. A multitrack tag is passed through (codec Other,
    // FourCC reported); a single track's codec comes from its FourCC.
    info.is_enhanced = true;
    uint8_t packet_type = body[0] & 0x0F;
    size_t pos = 1;
    read_mod_ex(body, pos, packet_type, static_cast<uint8_t>(ExAudioPacketType::ModEx),
                info.timestamp_offset_ns, kTag);
    bool need_fourcc = true;
    if (packet_type == static_cast<uint8_t>(ExAudioPacketType::Multitrack)) {
      info.is_multitrack = true;
      if (pos + 1 > body.size()) too_short(kTag, body.size(), pos + 1, "a multitrack type");
      info.multitrack_type = body[pos] >> 4;
      need_fourcc = info.multitrack_type != 2;
      packet_type = body[pos] & 0x0F;
      pos += 1;
    }
    if (need_fourcc) {
      if (pos + 4 > body.size()) too_short(kTag, body.size(), pos + 4, "an enhanced header with FourCC");
      info.fourcc = read_u32(body, pos);
      pos += 4;
    }
    info.packet_type = packet_type;
    if (!info.is_multitrack) info.codec = audio_codec_from_fourcc(info.fourcc);
    info.is_multichannel_config = packet_type == static_cast<uint8_t>(ExAudioPacketType::MultichannelConfig);
    info.is_sequence_header = packet_type == static_cast<uint8_t>(ExAudioPacketType::SequenceStart);
    info.is_sequence_end = packet_type == static_cast<uint8_t>(ExAudioPacketType::SequenceEnd);
    info.is_coded_frame = packet_type == static_cast<uint8_t>(ExAudioPacketType::CodedFrames);
    info.payload_offset = pos;
    return info;
  }

  // FLV E.4.2.1 AUDIODATA: SoundFormat UB[4], SoundRate UB[2], SoundSize UB[1], SoundType UB[1].
  info.sound_rate = (body[0] >> 2) & 0x03;
  info.sound_size = (body[0] >> 1) & 0x01;
  info.sound_type = body[0] & 0x01;
  info.payload_offset = 1;
  if (info.sound_format == kSoundFormatAac) {
    // "IF SoundFormat == 10: AACPacketType UI8": 0 AudioSpecificConfig, 1 raw AAC frame.
    info.codec = FlvAudioCodec::AAC;
    if (body.size() < 2) too_short(kTag, body.size(), 2, "AAC");
    info.packet_type = body[1];
    info.payload_offset = 2;
    info.is_sequence_header = info.packet_type == 0;
    info.is_coded_frame = info.packet_type == 1;
    return info;
  }
  if (info.sound_format == kSoundFormatMp3 || info.sound_format == kSoundFormatMp3_8k)
    info.codec = FlvAudioCodec::MP3;
  info.is_coded_frame = true;
  return info;
}

bool is_metadata(std::span<const uint8_t> body) {
  size_t pos = 0;
  std::string_view name;
  if (!read_amf_string(body, pos, name)) return false;
  if (name == "onMetaData") return true;
  if (name != "@setDataFrame") return false;
  return read_amf_string(body, pos, name) && name == "onMetaData";
}

size_t set_data_frame_offset(std::span<const uint8_t> body) {
  size_t pos = 0;
  std::string_view name;
  if (!read_amf_string(body, pos, name) || name != "@setDataFrame") return 0;
  if (pos >= body.size()) {
    throw ProtocolError("script tag: expected a value after \"@setDataFrame\", found end of data");
  }
  return pos;
}

std::vector<uint8_t> strip_set_data_frame(std::span<const uint8_t> body) {
  auto rest = body.subspan(set_data_frame_offset(body));
  return {rest.begin(), rest.end()};
}

}  // namespace rill::protocol
