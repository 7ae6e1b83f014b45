#pragma once
// Classification of FLV tag bodies, which are byte for byte the bodies of RTMP audio (8), video
// (9) and data (18) messages. References: Adobe FLV spec 10.1 Annex E ("FLV E.4.x") and Enhanced
// RTMP v2 (veovera, "E-RTMP"). Parsing reads only headers; payloads stay where they are and the
// caller slices body.subspan(payload_offset).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rill/protocol/error.h"

namespace rill::protocol {

// FLV E.4.1 TagType.
inline constexpr uint8_t kFlvTagAudio = 8;
inline constexpr uint8_t kFlvTagVideo = 9;
inline constexpr uint8_t kFlvTagScript = 18;

constexpr uint32_t make_fourcc(char a, char b, char c, char d) {
  return (uint32_t(uint8_t(a)) << 24) | (uint32_t(uint8_t(b)) << 16) | (uint32_t(uint8_t(c)) << 8) |
         uint32_t(uint8_t(d));
}
inline constexpr uint32_t kFourccAvc = make_fourcc('a', 'v', 'c', '1');
inline constexpr uint32_t kFourccHevc = make_fourcc('h', 'v', 'c', '1');
inline constexpr uint32_t kFourccAv1 = make_fourcc('a', 'v', '0', '1');
inline constexpr uint32_t kFourccVp9 = make_fourcc('v', 'p', '0', '9');
inline constexpr uint32_t kFourccVp8 = make_fourcc('v', 'p', '0', '8');
inline constexpr uint32_t kFourccVvc = make_fourcc('v', 'v', 'c', '1');
// E-RTMP v2 AudioFourCc.
inline constexpr uint32_t kFourccOpus = make_fourcc('O', 'p', 'u', 's');
inline constexpr uint32_t kFourccAac = make_fourcc('m', 'p', '4', 'a');
inline constexpr uint32_t kFourccMp3 = make_fourcc('.', 'm', 'p', '3');
// "avc1" etc. as text; non-printable bytes are shown as '.'.
std::string fourcc_to_string(uint32_t fourcc);

// ----- video ---------------------------------------------------------------------------------

// FLV E.4.3.1 CodecID values seen in RTMP, plus the de facto HEVC id 12 (the "Chinese" extension
// used by SRS, nginx-rtmp forks and patched ffmpeg before E-RTMP).
inline constexpr uint8_t kVideoCodecIdAvc = 7;
inline constexpr uint8_t kVideoCodecIdHevcLegacy = 12;

// FLV E.4.3.1 FrameType / E-RTMP VideoFrameType.
inline constexpr uint8_t kVideoFrameKey = 1;
inline constexpr uint8_t kVideoFrameInter = 2;
inline constexpr uint8_t kVideoFrameDisposable = 3;
inline constexpr uint8_t kVideoFrameGeneratedKey = 4;
inline constexpr uint8_t kVideoFrameCommand = 5;  // "video info/command frame": no media

// E-RTMP v2 VideoPacketType.
enum class ExVideoPacketType : uint8_t {
  SequenceStart = 0,
  CodedFrames = 1,
  SequenceEnd = 2,
  CodedFramesX = 3,  // coded frames with composition time implied 0
  Metadata = 4,      // body is AMF (e.g. colorInfo), no video
  Mpeg2TsSequenceStart = 5,
  Multitrack = 6,
  ModEx = 7,
};

// E-RTMP v2 PacketModExType: what a ModEx round's data is.
inline constexpr uint8_t kModExTimestampOffsetNano = 0;  // modExData is UI24 nanoseconds (< 1 ms)

enum class FlvVideoCodec : uint8_t { H264, HEVC, AV1, VP9, Other };
const char* to_string(FlvVideoCodec c);

struct VideoTagInfo {
  FlvVideoCodec codec = FlvVideoCodec::Other;
  uint8_t codec_id = 0;             // legacy CodecID (bits 0-3); 0 for enhanced tags
  uint32_t fourcc = 0;              // enhanced FourCC; 0 for legacy tags and multitrack/command frames
  uint8_t frame_type = 0;           // raw: bits 4-7 (legacy) or bits 4-6 (enhanced)
  uint8_t packet_type = 0;          // legacy AVCPacketType, or the E-RTMP VideoPacketType (after ModEx)
  bool is_enhanced = false;         // E-RTMP IsExHeader bit (0x80) set
  bool is_multitrack = false;       // E-RTMP Multitrack: codec Other (flv_multitrack.h reads the tracks)
  uint8_t multitrack_type = 0;      // AvMultitrackType when is_multitrack (0 OneTrack, 1 ManyTracks, 2 ...)
  bool is_command_frame = false;    // frame type 5: no media, not a keyframe
  bool is_sequence_header = false;  // decoder configuration record (AVCC/HVCC/av1C/vpcC)
  bool is_sequence_end = false;
  bool is_coded_frame = false;       // carries coded media (what a player decodes)
  bool is_keyframe = false;          // coded frame with frame type 1 (never a sequence header)
  int32_t composition_time_ms = 0;   // SI24 PTS - DTS (AVC/HEVC); 0 where absent
  uint32_t timestamp_offset_ns = 0;  // E-RTMP ModEx TimestampOffsetNano: added to the ms timestamp
  size_t payload_offset = 0;         // first byte of the NALUs / OBUs / config record
};

// Throws ProtocolError on an empty or short body ("video tag: 1 byte, expected at least 5 for AVC").
VideoTagInfo parse_video_tag(std::span<const uint8_t> body);

// ----- audio ---------------------------------------------------------------------------------

// FLV E.4.2.1 SoundFormat.
inline constexpr uint8_t kSoundFormatMp3 = 2;
inline constexpr uint8_t kSoundFormatExHeader = 9;  // E-RTMP ExAudioTagHeader (was reserved)
inline constexpr uint8_t kSoundFormatAac = 10;
inline constexpr uint8_t kSoundFormatMp3_8k = 14;

// E-RTMP v2 AudioPacketType.
enum class ExAudioPacketType : uint8_t {
  SequenceStart = 0,
  CodedFrames = 1,
  SequenceEnd = 2,
  MultichannelConfig = 4,
  Multitrack = 5,
  ModEx = 7,
};

// Opus: E-RTMP "Opus" FourCC only; AAC and MP3 legacy (SoundFormat 10, 2, 14) or E-RTMP ("mp4a",
// ".mp3": the same payloads as their legacy forms).
enum class FlvAudioCodec : uint8_t { AAC, MP3, Opus, Other };
const char* to_string(FlvAudioCodec c);

struct AudioTagInfo {
  FlvAudioCodec codec = FlvAudioCodec::Other;
  uint8_t sound_format = 0;  // bits 4-7
  uint8_t sound_rate = 0;    // bits 2-3: 0 5.5 kHz, 1 11 kHz, 2 22 kHz, 3 44 kHz (legacy only)
  uint8_t sound_size = 0;    // bit 1: 0 8-bit, 1 16-bit (legacy only)
  uint8_t sound_type = 0;    // bit 0: 0 mono, 1 stereo (legacy only)
  uint8_t packet_type = 0;   // AACPacketType, or the E-RTMP AudioPacketType (after ModEx)
  uint32_t fourcc = 0;       // enhanced FourCC ("mp4a", "Opus", ...); 0 otherwise
  bool is_enhanced = false;
  bool is_multitrack = false;
  uint8_t multitrack_type = 0;      // AvMultitrackType when is_multitrack
  bool is_sequence_header = false;  // AAC AudioSpecificConfig / E-RTMP SequenceStart
  bool is_sequence_end = false;
  bool is_coded_frame = false;
  bool is_multichannel_config = false;  // E-RTMP MultichannelConfig (audio_multichannel.h reads it)
  uint32_t timestamp_offset_ns = 0;     // E-RTMP ModEx TimestampOffsetNano
  size_t payload_offset = 0;
};

// Throws ProtocolError on an empty or short body.
AudioTagInfo parse_audio_tag(std::span<const uint8_t> body);

// ----- script data ---------------------------------------------------------------------------

// True when the body is "onMetaData" ... or "@setDataFrame" "onMetaData" ... (AMF0 strings, FLV
// E.4.4.1 / E.5). Never throws: anything else, malformed included, is false.
bool is_metadata(std::span<const uint8_t> body);

// Offset of the value after a leading "@setDataFrame" string, or 0 when the body does not begin
// with one. Throws ProtocolError when "@setDataFrame" is the whole body.
size_t set_data_frame_offset(std::span<const uint8_t> body);

// The body with a leading "@setDataFrame" removed (so it starts at "onMetaData"): what players
// must receive when a publisher sends @setDataFrame (nginx-rtmp and SRS do the same). A body
// without one is returned unchanged.
std::vector<uint8_t> strip_set_data_frame(std::span<const uint8_t> body);

}  // namespace rill::protocol
