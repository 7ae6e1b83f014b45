#pragma once
// rill-bench's AV1 + Opus publish mode (Enhanced RTMP): AV1 from an IVF file (ffmpeg -c:v
// libaom-av1 or libsvtav1 -f ivf) as E-RTMP v1 `av01` video, and optionally Opus from an Ogg file
// (ffmpeg -c:a libopus -f ogg) as E-RTMP v2 `Opus` audio:
// - video: one SequenceStart carrying an AV1CodecConfigurationRecord built from the first
//   sequence header OBU (its fields from the OBU, the OBU itself as configOBUs), then one
//   CodedFrames tag per IVF frame (the temporal unit as the file has it) at the frame's pts; a
//   frame is a keyframe when it carries a sequence header OBU (libaom and SVT-AV1 repeat it with
//   each key frame);
// - audio: one SequenceStart carrying the OpusHead packet, then one CodedFrames tag per Opus
//   packet after OpusTags, timed by the packets' durations (from their TOC bytes).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "flv_source.h"

namespace rill::loadgen {

// The file is AV1 in IVF when its name ends in .ivf.
bool is_ivf_path(const std::string& path);

// The video tags of an IVF file of AV1; throws std::runtime_error (a ProtocolError for malformed
// bytes) when it is not AV1 or has no sequence header OBU before its first frame's end.
std::vector<SourceTag> av1_tags_from_ivf(std::span<const uint8_t> ivf);

// The audio tags of an Ogg Opus file; throws std::runtime_error when its first packet is not an
// OpusHead.
std::vector<SourceTag> opus_tags_from_ogg(std::span<const uint8_t> ogg);

// Loads an IVF file and, when `ogg_path` is not empty, an Ogg Opus file as one publish source.
std::shared_ptr<const FlvSource> load_av1_opus(const std::string& ivf_path, const std::string& ogg_path);

}  // namespace rill::loadgen
