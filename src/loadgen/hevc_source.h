#pragma once
// rill-bench's Enhanced RTMP publish mode: an H.265 Annex B elementary stream (e.g. ffmpeg
// -c:v libx265 -f hevc) turned into E-RTMP video tags (E-RTMP v2: IsExHeader, FourCC hvc1): one
// SequenceStart carrying an HEVCDecoderConfigurationRecord built from the stream's first VPS,
// SPS and PPS, then one CodedFramesX tag per access unit (4-byte NAL unit lengths; parameter
// sets and AUDs left out of the samples) at a fixed frame rate. No B-frame reordering is
// modelled (composition time 0): encode without B-frames.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "flv_source.h"

namespace rill::loadgen {

// The file is HEVC Annex B when its name ends in .h265, .265 or .hevc.
bool is_hevc_annexb_path(const std::string& path);

// Tags of an Annex B stream (timestamps i * 1000 / fps); throws std::runtime_error when it has
// no VPS, SPS or PPS before its first picture, or no picture at all.
std::vector<SourceTag> hevc_tags_from_annexb(std::span<const uint8_t> annexb, uint32_t fps);

// Loads a file as a publish source (FlvSource::from_tags of the tags above).
std::shared_ptr<const FlvSource> load_hevc_annexb(const std::string& path, uint32_t fps = 25);

}  // namespace rill::loadgen
