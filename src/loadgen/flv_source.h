#pragma once
// rill-bench: an FLV file loaded once and shared by every publisher (read-only after load, so
// threads may share it too), and a cursor that loops it with ever-increasing timestamps.
//
// The file's script tag (onMetaData) and the first video/audio sequence headers are the
// "preamble", sent once at the start of a publish. The remaining tags (the media) are played in
// a loop: pass k adds k * loop_duration to every timestamp, where loop_duration is the file's
// media span plus one video frame interval, so timestamps never repeat or go backwards.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rill/core/buffer.h"

namespace rill::loadgen {

struct SourceTag {
  uint8_t type = 0;         // 8 audio, 9 video, 18 script
  uint32_t timestamp = 0;   // relative to the first media tag
  bool keyframe = false;    // coded video keyframe
  BufferRef body;           // shared; never modified after load
};

class FlvSource {
 public:
  // Loads the whole file; throws std::runtime_error (message names the file and the problem).
  static std::shared_ptr<const FlvSource> load(const std::string& path);
  // The audio, video and script tags of a file, in file order with file timestamps (load's
  // first step); throws as load does.
  static std::vector<SourceTag> read_tags(const std::string& path);
  // From tags already in memory (tests). Tags are in file order with absolute file timestamps.
  static std::shared_ptr<const FlvSource> from_tags(std::vector<SourceTag> tags);

  const std::vector<SourceTag>& preamble() const { return preamble_; }
  const std::vector<SourceTag>& media() const { return media_; }
  uint32_t loop_duration_ms() const { return loop_duration_ms_; }
  // Mean media bit rate of one pass (for messages), bits per second.
  double bitrate_bps() const;

 private:
  std::vector<SourceTag> preamble_;
  std::vector<SourceTag> media_;
  uint32_t loop_duration_ms_ = 0;
  uint64_t media_bytes_ = 0;
};

// Walks the media of a source forever: tag() / timestamp() of the current tag, advance() to the
// next (wrapping to the next pass).
class FlvCursor {
 public:
  explicit FlvCursor(std::shared_ptr<const FlvSource> src) : src_(std::move(src)) {}
  bool empty() const { return src_->media().empty(); }
  const SourceTag& tag() const { return src_->media()[index_]; }
  // Timestamp with the loop offset: pass * loop_duration + tag timestamp (32-bit wrap, as RTMP).
  uint32_t timestamp() const {
    return static_cast<uint32_t>(pass_ * src_->loop_duration_ms() + tag().timestamp);
  }
  // Milliseconds since the start of the publish at which the current tag is due.
  uint64_t due_ms() const { return pass_ * src_->loop_duration_ms() + tag().timestamp; }
  void advance();
  uint64_t pass() const { return pass_; }

 private:
  std::shared_ptr<const FlvSource> src_;
  size_t index_ = 0;
  uint64_t pass_ = 0;
};

}  // namespace rill::loadgen
