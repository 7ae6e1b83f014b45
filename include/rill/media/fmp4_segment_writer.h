#pragma once
// Fmp4SegmentWriter: fragmented MP4 segments (protocol::Fmp4Muxer; RFC 8216 §3.3) for a
// segmenter's plan (segment_writer.h). Each run has its init section (ftyp + moov, EXT-X-MAP);
// a segment is one moof + mdat, or with LL-HLS its parts, each a moof + mdat of its own, one after
// the other (a segment is exactly the concatenation of its parts). MP3 is not carried.
#include <spdlog/logger.h>

#include <memory>
#include <string>
#include <vector>

#include "rill/core/stream_log.h"
#include "rill/media/segment_writer.h"

namespace rill::protocol {
class Fmp4Muxer;
}  // namespace rill::protocol

namespace rill::media {

class Fmp4SegmentWriter final : public SegmentWriter {
 public:
  // `label` starts its log lines ("hls: live/cam").
  Fmp4SegmentWriter(core::StreamLog log, std::string label);
  ~Fmp4SegmentWriter() override;

  std::string_view container() const override { return "fMP4"; }
  bool carries(protocol::AudioCodec codec) const override { return codec != protocol::AudioCodec::MP3; }
  bool carries(protocol::VideoCodec) const override { return true; }
  BufferRef start_run(const SegmentTracks& tracks) override;
  void begin_segment() override;
  WriteResult write_video(const SegmentSample& s) override { return add(true, s); }
  void write_audio(const SegmentSample& s) override { add(false, s); }
  bool part_pending() const override;
  std::optional<SegmentPart> cut_part(int64_t end_ms) override;
  BufferRef finish_segment(int64_t end_ms) override;
  uint64_t samples() const override { return samples_; }
  size_t size() const override;
  size_t capacity() const override { return seg_.capacity(); }
  const SampleCounts& counts() const override { return counts_; }

 private:
  WriteResult add(bool video, const SegmentSample& s);

  core::StreamLog log_;
  const std::string label_;
  std::unique_ptr<protocol::Fmp4Muxer> mux_;  // the run's; none when it refused the configuration
  std::vector<uint8_t> seg_;                  // the segment (its parts so far) being built
  uint64_t samples_ = 0;
  SampleCounts counts_;
};

}  // namespace rill::media
