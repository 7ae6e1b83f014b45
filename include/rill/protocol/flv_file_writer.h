#pragma once
// FlvFileWriter: an FLV file (FLV spec 10.1 Annex E) for recording, whose onMetaData script tag,
// written first, is rewritten in place when the file closes with what only the end knows:
// `duration`, `filesize`, `lasttimestamp`, `lastkeyframetimestamp`, `lastkeyframelocation` and a
// keyframe index `keyframes: {times: [seconds...], filepositions: [offsets...]}` in the layout of
// yamdi's (the object players and ffmpeg read to seek without scanning the file). Pure bytes:
// the caller writes begin() and the tags at the end of the file, and final_metadata() at
// kMetadataOffset when it closes.
//
// The first onMetaData tag reserves room for the index: its body is as long as the final one
// with `keyframe_capacity` entries, and any shorter rewrite is padded to that exact length after
// the ECMA array (AMF0 strings of spaces, then at most two AMF0 nulls), so no byte after it moves.
// When more keyframes come than the index has room for, every other entry is dropped and from
// then on only every second (fourth, ...) keyframe is indexed: the index thins out but still
// spans the whole file, so a player can seek anywhere to within a few keyframes.
//
// Timestamps given to write_tag() are the file's (its first tag at 0 or a little after).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rill/protocol/amf0.h"

namespace rill::protocol {

struct FlvFileWriterOptions {
  bool has_audio = false;
  bool has_video = false;
  size_t keyframe_capacity = 1024;  // index entries the reserved room holds (at least 2)
  // Properties of the publisher's onMetaData to keep (width, height, codec ids, encoder...):
  // an object or ECMA array; the keys the writer sets itself are left out.
  Amf0Value source_metadata = Amf0Value::ecma_array();
};

class FlvFileWriter {
 public:
  static constexpr uint64_t kMetadataOffset = 13;  // after the header and PreviousTagSize0 (E.2, E.3)

  explicit FlvFileWriter(FlvFileWriterOptions options);

  // The header, PreviousTagSize0 and the first onMetaData tag (duration 0, an empty index,
  // padded to the reserved room).
  void begin(std::vector<uint8_t>& out);
  // One audio (8), video (9) or script (18) tag; `keyframe` indexes a video tag. Throws
  // ProtocolError for a body over the UI24 DataSize.
  void write_tag(uint8_t type, uint32_t timestamp_ms, std::span<const uint8_t> body, bool keyframe,
                 std::vector<uint8_t>& out);

  uint64_t size() const { return size_; }  // bytes of the file so far
  // The onMetaData tag as it must read now, exactly as long as the one begin() wrote: what the
  // caller writes at kMetadataOffset on close.
  std::vector<uint8_t> final_metadata() const;
  // Its duration (ms): the end of the last tag of the longest track (last timestamp plus the
  // interval before it).
  uint32_t duration_ms() const;

  size_t indexed_keyframes() const { return times_.size(); }
  uint32_t index_stride() const { return stride_; }  // 1: every keyframe is in the index

  // What write_tag() has changed since: rollback(mark()) forgets the tags written after it (the
  // caller drops their bytes, e.g. a chunk the disk never took).
  struct Mark {
    uint64_t size = 0;
    uint64_t keyframes_seen = 0;
    uint32_t last_ts[2] = {0, 0}, last_delta[2] = {0, 0};
    bool seen[2] = {false, false};
    uint32_t last_key_ts = 0;
    uint64_t last_key_pos = 0;
  };
  Mark mark() const;
  void rollback(const Mark& m);

 private:
  // The script tag body: "onMetaData" and the ECMA array, padded to `room` bytes when room > 0.
  std::vector<uint8_t> metadata_body(bool final_values, size_t entries_for_room, size_t room) const;

  FlvFileWriterOptions opt_;
  size_t room_ = 0;  // body size of the onMetaData tag
  uint64_t size_ = 0;
  Mark m_;
  uint32_t stride_ = 1;
  std::vector<double> times_;  // seconds
  std::vector<double> positions_;
};

}  // namespace rill::protocol
