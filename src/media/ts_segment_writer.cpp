#include "rill/media/ts_segment_writer.h"

#include <algorithm>

#include "rill/protocol/aac.h"
#include "rill/protocol/error.h"

namespace rill::media {

using protocol::TsSample;

TsSegmentWriter::TsSegmentWriter(core::StreamLog log, std::string label, size_t max_segment_size)
    : log_(std::move(log)), label_(std::move(label)), max_segment_size_(max_segment_size) {}

BufferRef TsSegmentWriter::start_run(const SegmentTracks& t) {
  const protocol::TsStreams& d = t.streams;
  mux_ = std::make_unique<protocol::TsMuxer>(d);
  try {
    if (d.has_video && d.video == protocol::VideoCodec::HEVC)
      mux_->set_hevc_config(t.video_record);
    else if (d.has_video)
      mux_->set_avc_config(t.video_record);
    if (d.has_audio && d.audio == protocol::AudioCodec::AAC) mux_->set_aac_config(t.audio_asc);
  } catch (const protocol::ProtocolError& e) {  // validated on arrival; kept for safety
    log_.warn("{}: codec configuration rejected by the TS muxer: {}", label_, e.what());
  }
  return {};  // every segment carries its PAT and PMT
}

void TsSegmentWriter::begin_segment() {
  samples_ = 0;
  if (!mux_) return;
  // Room for a segment like the last one (capped: a segment never outgrows max_segment_size).
  seg_.start(std::min(last_size_ + last_size_ / 8, max_segment_size_));
  mux_->begin_segment(seg_);  // PAT and PMT first (RFC 8216 §3.2)
}

WriteResult TsSegmentWriter::write_video(const SegmentSample& s) {
  if (!mux_) {
    ++counts_.skipped;
    return WriteResult::Skipped;
  }
  const TsSample ts{TsSample::Kind::Video, s.dts_ms, s.cts_ms, s.keyframe, s.data};
  const uint64_t before = mux_->stats().samples_written();
  try {
    mux_->write(ts, seg_);
  } catch (const protocol::ProtocolError& e) {
    dropped(1, "dropped a malformed sample", e.what());
    return WriteResult::Dropped;
  }
  if (mux_->stats().samples_written() == before) {
    ++counts_.skipped;
    return WriteResult::Skipped;
  }
  ++samples_;
  ++counts_.written;
  return WriteResult::Written;
}

void TsSegmentWriter::write_audio(const SegmentSample& s) {
  if (!mux_) {
    ++counts_.skipped;
    return;
  }
  // A frame ADTS cannot carry is dropped alone here rather than failing its whole group.
  if (mux_->streams().audio == protocol::AudioCodec::AAC && s.data.size() > protocol::kAdtsMaxPayload) {
    dropped(1, "dropped a malformed sample",
            "AAC access unit of " + std::to_string(s.data.size()) + " bytes exceeds the ADTS limit");
    return;
  }
  if (!audio_held_.empty() && (s.dts_ms - audio_held_.front().dts >= kAudioPesMs ||
                               audio_bytes_.size() + s.data.size() > kAudioPesBytes)) {
    flush_audio();
  }
  audio_held_.push_back(HeldAudio{s.dts_ms, audio_bytes_.size(), s.data.size()});
  audio_bytes_.insert(audio_bytes_.end(), s.data.begin(), s.data.end());
}

void TsSegmentWriter::flush_audio() {
  if (audio_held_.empty()) return;
  audio_group_.clear();
  for (const HeldAudio& h : audio_held_) {
    TsSample s;
    s.kind = TsSample::Kind::Audio;
    s.dts_ms = h.dts;
    s.data = std::span<const uint8_t>(audio_bytes_).subspan(h.offset, h.size);
    audio_group_.push_back(s);
  }
  const size_t frames = audio_held_.size();
  audio_held_.clear();
  audio_bytes_.clear();
  if (!mux_) return;
  const uint64_t before = mux_->stats().samples_written();
  try {
    mux_->write_audio(audio_group_, seg_);
  } catch (const protocol::ProtocolError& e) {
    dropped(frames, "dropped malformed audio", e.what());
    return;
  }
  const uint64_t written = mux_->stats().samples_written() - before;
  samples_ += written;
  counts_.written += written;
  counts_.skipped += frames - written;
}

void TsSegmentWriter::dropped(uint64_t n, const char* what, const std::string& why) {
  counts_.dropped += n;
  if (counts_.dropped == n)  // the first time: a warning, then quieter
    log_.warn("{}: {}: {}", label_, what, why);
  else
    log_.debug("{}: {}: {}", label_, what, why);
}

BufferRef TsSegmentWriter::finish_segment(int64_t /*end_ms*/) {
  flush_audio();        // the segment's last audio group
  if (samples_ == 0) {  // PSI only: nothing worth a segment
    seg_.clear();
    return {};
  }
  // The bytes were written where they are served from: no copy.
  BufferRef bytes = seg_.finish();
  last_size_ = bytes.size();
  return bytes;
}

size_t TsSegmentWriter::size() const {
  // Held audio: one PES for the group (PES header once, an ADTS header per frame).
  const size_t held = audio_held_.empty()
                          ? 0
                          : ts_bytes_for_pes(kPesHeaderMax + audio_held_.size() * protocol::kAdtsHeaderSize +
                                             audio_bytes_.size());
  return seg_.size() + held;
}

}  // namespace rill::media
