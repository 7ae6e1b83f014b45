#include "rill/media/fmp4_segment_writer.h"

#include <utility>

#include "rill/protocol/error.h"
#include "rill/protocol/fmp4_muxer.h"

namespace rill::media {

Fmp4SegmentWriter::Fmp4SegmentWriter(core::StreamLog log, std::string label)
    : log_(std::move(log)), label_(std::move(label)) {}

Fmp4SegmentWriter::~Fmp4SegmentWriter() = default;

BufferRef Fmp4SegmentWriter::start_run(const SegmentTracks& t) {
  mux_.reset();
  protocol::Fmp4Tracks tracks;
  tracks.has_video = t.streams.has_video;
  if (tracks.has_video) tracks.video_record.assign(t.video_record.begin(), t.video_record.end());
  switch (t.streams.video) {
    case protocol::VideoCodec::H264:
      tracks.video_codec = protocol::Fmp4VideoCodec::Avc;
      break;
    case protocol::VideoCodec::HEVC:
      tracks.video_codec = protocol::Fmp4VideoCodec::Hevc;
      break;
    case protocol::VideoCodec::AV1:
      tracks.video_codec = protocol::Fmp4VideoCodec::Av1;
      break;
    case protocol::VideoCodec::VP9:
      tracks.video_codec = protocol::Fmp4VideoCodec::Vp9;
      break;
  }
  tracks.width = t.width;
  tracks.height = t.height;
  tracks.has_audio = t.streams.has_audio;
  if (tracks.has_audio && t.streams.audio == protocol::AudioCodec::Opus) {
    tracks.audio_codec = protocol::Fmp4AudioCodec::Opus;
    tracks.opus_head.assign(t.opus_head.begin(), t.opus_head.end());
  } else if (tracks.has_audio) {
    tracks.audio_asc.assign(t.audio_asc.begin(), t.audio_asc.end());
  }
  try {
    mux_ = std::make_unique<protocol::Fmp4Muxer>(std::move(tracks));
  } catch (const protocol::ProtocolError& e) {
    log_.warn("{}: codec configuration rejected by the fMP4 muxer: {}", label_, e.what());
    return {};
  }
  // The init section (EXT-X-MAP, RFC 8216 §4.3.2.5) of the segments that follow.
  return SharedBuffer::copy_of(std::span<const uint8_t>(mux_->init_segment()));
}

void Fmp4SegmentWriter::begin_segment() {
  seg_.clear();
  samples_ = 0;
}

WriteResult Fmp4SegmentWriter::add(bool video, const SegmentSample& s) {
  if (!mux_ || !mux_->add(protocol::Fmp4Sample{video, s.dts_ms, s.cts_ms, s.keyframe, s.data})) {
    ++counts_.skipped;
    return WriteResult::Skipped;
  }
  ++samples_;
  ++counts_.written;
  return WriteResult::Written;
}

bool Fmp4SegmentWriter::part_pending() const { return mux_ && !mux_->empty(); }

std::optional<SegmentPart> Fmp4SegmentWriter::cut_part(int64_t end_ms) {
  if (!part_pending()) return std::nullopt;
  const bool independent = mux_->independent();  // INDEPENDENT=YES (§4.4.4.9)
  const size_t from = seg_.size();
  mux_->flush(end_ms, seg_);
  return SegmentPart{SharedBuffer::copy_of(std::span<const uint8_t>(seg_).subspan(from)), independent};
}

BufferRef Fmp4SegmentWriter::finish_segment(int64_t end_ms) {
  // One moof + mdat for what no part took (all of it without LL-HLS).
  if (mux_) mux_->flush(end_ms, seg_);
  if (samples_ == 0) {
    seg_.clear();
    return {};
  }
  BufferRef bytes = SharedBuffer::copy_of(std::span<const uint8_t>(seg_));
  // Keep the capacity for the next segment of about this size; give back what an unusually big
  // one left behind.
  const size_t size = bytes.size();
  seg_.clear();
  if (seg_.capacity() > 2 * size + (1u << 20)) {
    std::vector<uint8_t> fresh;
    fresh.reserve(size);
    seg_.swap(fresh);
  }
  return bytes;
}

size_t Fmp4SegmentWriter::size() const {
  if (!mux_) return seg_.size();
  return seg_.size() + protocol::Fmp4Muxer::fragment_overhead(samples_) + mux_->pending_bytes();
}

}  // namespace rill::media
