#include "rill/media/rendition_traits.h"

#include "rill/protocol/av1.h"
#include "rill/protocol/avc.h"
#include "rill/protocol/codecs_string.h"
#include "rill/protocol/error.h"

namespace rill::media {

namespace {

std::string video_codecs(protocol::VideoCodec codec, std::span<const uint8_t> record) {
  switch (codec) {
    case protocol::VideoCodec::H264:
      return protocol::avc_codecs_string(record);
    case protocol::VideoCodec::HEVC:
      return protocol::hevc_codecs_string(record);
    case protocol::VideoCodec::AV1:
      return protocol::av1_codecs_string(record);
    case protocol::VideoCodec::VP9:
      return protocol::vp9_codecs_string(record);
  }
  return {};
}

std::string audio_codecs(protocol::AudioCodec codec, std::span<const uint8_t> record) {
  switch (codec) {
    case protocol::AudioCodec::AAC:
      return protocol::aac_codecs_string(record);
    case protocol::AudioCodec::Opus:
      return protocol::opus_codecs_string();
    case protocol::AudioCodec::MP3:
      return "mp4a.40.34";  // MPEG-1/2 Layer III as HLS names it (Apple's HLS authoring spec)
  }
  return {};
}

// The cropped picture size the record's first SPS (AVC) or sequence header (AV1) declares.
void read_size(protocol::VideoCodec codec, std::span<const uint8_t> record, HlsRenditionTraits& t) {
  if (codec == protocol::VideoCodec::H264) {
    const protocol::AvcConfig c = protocol::parse_avc_config(record);
    if (c.sps.empty()) return;
    const protocol::AvcSpsInfo sps = protocol::parse_avc_sps(c.sps.front());
    t.width = sps.width;
    t.height = sps.height;
  } else if (codec == protocol::VideoCodec::AV1) {
    const protocol::Av1FrameSize size =
        protocol::av1_frame_size(protocol::parse_av1_config(record).config_obus);
    t.width = size.width;
    t.height = size.height;
  }
}

template <class F>
void unless_malformed(F&& f) {
  try {
    f();
  } catch (const protocol::ProtocolError&) {
    // Left out (see the header).
  }
}

}  // namespace

HlsRenditionTraits rendition_traits(const protocol::TsStreams& tracks, std::span<const uint8_t> video_record,
                                    std::span<const uint8_t> audio_record, uint32_t width, uint32_t height) {
  HlsRenditionTraits t;
  std::string video, audio;
  if (tracks.has_video) {
    unless_malformed([&] { video = video_codecs(tracks.video, video_record); });
    t.width = width;
    t.height = height;
    if (width == 0 || height == 0) unless_malformed([&] { read_size(tracks.video, video_record, t); });
  }
  if (tracks.has_audio) unless_malformed([&] { audio = audio_codecs(tracks.audio, audio_record); });
  t.codecs = protocol::join_codecs(video, audio);
  return t;
}

}  // namespace rill::media
