#pragma once
// RewindLink: what hls.rewind (docs/hls.md "Rewind") ties together on the worker that owns a
// recorded stream — its HlsSegmenter, its Recorder and the HlsStore that renders the playlist.
//
//   * The segmenter tells it each frame's place on the segment timeline (mapped) and each segment
//     it closes (segment_closed, before the frame that starts the next one); the recorder, an
//     output after the segmenter, cuts its fMP4 fragment there and writes its timestamps on the
//     same timeline, so a live segment is a run of whole moof + mdat pairs of the recording file
//     (offset, length) with the live segment's tfdt.
//   * The recorder hands back each such run once the writer has written it (recorded); the store
//     keeps it in the stream's rewind history when the file's moov is the live init section the
//     segment was cut under (same tracks, timescales, sample entries: one EXT-X-MAP), and serves
//     the segment's live URI from those bytes once the in-memory copy is gone.
// media/: no file, no clock. One worker thread.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "rill/core/buffer.h"
#include "rill/media/stream_key.h"

namespace rill::media {

class HlsStore;

class RewindLink {
 public:
  // A live segment the segmenter closed: the recorder's fragment ends at end_ts (the start of the
  // frame that follows, on the segment timeline).
  struct Cut {
    uint64_t sequence = 0;
    double duration_s = 0;
    bool discontinuity = false;
    uint32_t end_ts = 0;
    uint64_t init_id = 0;  // the live init section the segment was made under
    BufferRef init;        // its bytes (null: MPEG-TS, nothing to agree with)
  };

  RewindLink(HlsStore& store, StreamKey key);

  // ---- the segmenter's side ----
  void mapped(uint32_t ts, int64_t dts) {
    last_ts_ = ts;
    last_dts_ = dts;
    have_time_ = true;
  }
  void segment_closed(uint64_t sequence, double duration_s, bool discontinuity, int64_t end_dts);
  // The segmenter's playlist moved to `key` before its first segment (a multitrack publish's
  // track 0 becomes NAME_track0: media/hls_track_renditions.h); the history follows it.
  void follow(StreamKey key) { key_ = std::move(key); }

  // ---- the recorder's side ----
  void on_cut(std::function<void(const Cut&)> f) { on_cut_ = std::move(f); }
  // A frame timestamp on the segment timeline (the latest mapping, moved by the 32-bit difference).
  uint32_t time_of(uint32_t ts) const;
  bool has_time() const { return have_time_; }
  // The bytes [offset, offset + length) of the recording file at `path` hold segment `cut`, and
  // are written.
  void recorded(const Cut& cut, const std::string& path, uint64_t offset, uint64_t length);

 private:
  HlsStore& store_;
  StreamKey key_;
  std::function<void(const Cut&)> on_cut_;
  bool have_time_ = false;
  uint32_t last_ts_ = 0;
  int64_t last_dts_ = 0;
  std::shared_ptr<const std::string> path_;  // the recording file of the last segment recorded
};

}  // namespace rill::media
