#pragma once
// rill-bench's Enhanced RTMP tag bodies: the first byte (E-RTMP v1 ExVideoTagHeader: IsExHeader
// | FrameType | VideoPacketType; E-RTMP v2 ExAudioTagHeader: SoundFormat 9 | AudioPacketType),
// the FourCC, then the payload, as a SourceTag for FlvSource::from_tags.
#include <cstdint>
#include <span>

#include "flv_source.h"
#include "rill/protocol/flv_tag.h"

namespace rill::loadgen {

SourceTag ex_video_tag(uint32_t fourcc, uint32_t ts, bool key, protocol::ExVideoPacketType type,
                       std::span<const uint8_t> payload);
SourceTag ex_audio_tag(uint32_t fourcc, uint32_t ts, protocol::ExAudioPacketType type,
                       std::span<const uint8_t> payload);

}  // namespace rill::loadgen
