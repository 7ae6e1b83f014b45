#include "ertmp_tags.h"

#include <vector>

namespace rill::loadgen {

namespace {

SourceTag make_ex_tag(uint8_t type, uint32_t ts, bool key, uint8_t first, uint32_t fourcc,
                      std::span<const uint8_t> payload) {
  std::vector<uint8_t> b = {first, static_cast<uint8_t>(fourcc >> 24), static_cast<uint8_t>(fourcc >> 16),
                            static_cast<uint8_t>(fourcc >> 8), static_cast<uint8_t>(fourcc)};
  b.insert(b.end(), payload.begin(), payload.end());
  SourceTag t;
  t.type = type;
  t.timestamp = ts;
  t.keyframe = key;
  t.body = SharedBuffer::copy_of(std::span<const uint8_t>(b));
  return t;
}

}  // namespace

SourceTag ex_video_tag(uint32_t fourcc, uint32_t ts, bool key, protocol::ExVideoPacketType type,
                       std::span<const uint8_t> payload) {
  const uint8_t frame = key ? protocol::kVideoFrameKey : protocol::kVideoFrameInter;
  return make_ex_tag(protocol::kFlvTagVideo, ts, key,
                     static_cast<uint8_t>(0x80 | frame << 4 | static_cast<uint8_t>(type)), fourcc, payload);
}

SourceTag ex_audio_tag(uint32_t fourcc, uint32_t ts, protocol::ExAudioPacketType type,
                       std::span<const uint8_t> payload) {
  return make_ex_tag(protocol::kFlvTagAudio, ts, false,
                     static_cast<uint8_t>(protocol::kSoundFormatExHeader << 4 | static_cast<uint8_t>(type)),
                     fourcc, payload);
}

}  // namespace rill::loadgen
