#include "rill/media/media_frame.h"

#include <string>

#include "rill/protocol/chunk_writer.h"
#include "rill/protocol/error.h"
#include "rill/protocol/flv_file.h"
#include "rill/protocol/flv_tag.h"
#include "rill/protocol/http_chunk.h"
#include "rill/protocol/rtmp_message.h"

namespace rill::media {

// A frame is allocated per message and lives in every queue it is in: keep it at 56 bytes.
static_assert(sizeof(void*) != 8 || sizeof(MediaFrame) == 56, "MediaFrame grew: mind its padding");

namespace {
uint32_t csid_for(MediaType t) {
  switch (t) {
    case MediaType::Audio:
      return kRtmpCsidAudio;
    case MediaType::Video:
      return kRtmpCsidVideo;
    case MediaType::Data:
      return kRtmpCsidData;
  }
  return kRtmpCsidData;
}

FrameCodec codec_of(protocol::FlvVideoCodec c) {
  switch (c) {
    case protocol::FlvVideoCodec::H264:
      return FrameCodec::H264;
    case protocol::FlvVideoCodec::HEVC:
      return FrameCodec::HEVC;
    case protocol::FlvVideoCodec::AV1:
      return FrameCodec::AV1;
    case protocol::FlvVideoCodec::VP9:
      return FrameCodec::VP9;
    case protocol::FlvVideoCodec::Other:
      return FrameCodec::Other;
  }
  return FrameCodec::Other;
}

FrameCodec codec_of(protocol::FlvAudioCodec c) {
  switch (c) {
    case protocol::FlvAudioCodec::AAC:
      return FrameCodec::AAC;
    case protocol::FlvAudioCodec::MP3:
      return FrameCodec::MP3;
    case protocol::FlvAudioCodec::Opus:
      return FrameCodec::Opus;
    case protocol::FlvAudioCodec::Other:
      return FrameCodec::Other;
  }
  return FrameCodec::Other;
}
}  // namespace

void set_tag_facts(MediaFrame& f, const protocol::VideoTagInfo& vi) {
  // A command frame carries no video; a multitrack tag carries several tracks' (passed through).
  f.codec = vi.is_command_frame || vi.is_multitrack ? FrameCodec::None : codec_of(vi.codec);
  f.sequence_header = vi.is_sequence_header;
  f.keyframe = vi.is_keyframe || vi.is_sequence_header;
  f.coded = vi.is_coded_frame;
  f.composition_time = vi.composition_time_ms;
  f.data_offset = static_cast<uint32_t>(vi.payload_offset);  // within a message: under 2^24
}

void set_tag_facts(MediaFrame& f, const protocol::AudioTagInfo& ai) {
  f.codec = codec_of(ai.codec);  // multitrack audio, and FourCCs not read here, are Other
  f.sequence_header = ai.is_sequence_header;
  f.coded = ai.is_coded_frame;
  f.data_offset = static_cast<uint32_t>(ai.payload_offset);
}

std::string codec_description(const MediaFrame& f) {
  try {
    if (f.type == MediaType::Video) {
      const protocol::VideoTagInfo vi = protocol::parse_video_tag(f.payload.span());
      return vi.fourcc ? protocol::fourcc_to_string(vi.fourcc) : std::string(protocol::to_string(vi.codec));
    }
    if (f.type == MediaType::Audio) {
      const protocol::AudioTagInfo ai = protocol::parse_audio_tag(f.payload.span());
      return "audio format " + std::to_string(ai.sound_format) +
             (ai.fourcc ? " (" + protocol::fourcc_to_string(ai.fourcc) + ")" : "");
    }
  } catch (const protocol::ProtocolError&) {  // it was parsed once already: not expected
    return "?";
  }
  return "script data";
}

const BufferRef& MediaFrame::rtmp_chunks(uint32_t chunk_size) const {
  if (!rtmp_cache_ || rtmp_cache_chunk_size_ != chunk_size) {
    protocol::RtmpMessage m;
    m.type_id = static_cast<uint8_t>(type);
    m.stream_id = kRtmpPlayStreamId;
    m.timestamp = timestamp;
    m.csid = csid_for(type);
    m.payload = payload;
    rtmp_cache_ = protocol::ChunkWriter::serialize(m, chunk_size);
    rtmp_cache_chunk_size_ = chunk_size;
  }
  return rtmp_cache_;
}

const BufferRef& MediaFrame::flv_tag() const {
  if (!flv_cache_)
    flv_cache_ = protocol::serialize_flv_tag(static_cast<uint8_t>(type), timestamp, payload.span());
  return flv_cache_;
}

const BufferRef& MediaFrame::flv_chunk() const {
  if (!flv_chunk_cache_) {
    const std::string size_line = protocol::http_chunk_size_line(protocol::flv_tag_size(payload.size()));
    flv_chunk_cache_ = protocol::serialize_flv_tag_framed(static_cast<uint8_t>(type), timestamp,
                                                          payload.span(), size_line, "\r\n");
  }
  return flv_chunk_cache_;
}

}  // namespace rill::media
