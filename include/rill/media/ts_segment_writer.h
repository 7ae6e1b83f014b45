#pragma once
// TsSegmentWriter: MPEG-TS segments (protocol::TsMuxer, ISO/IEC 13818-1) for a segmenter's plan
// (segment_writer.h). Each segment is built in place in the shared buffer it is then served from
// (media::SegmentBuffer): PAT and PMT first (RFC 8216 §3.2), then a PES per video sample and one
// per group of audio frames. The muxer (continuity counters) lives for a run.
#include <spdlog/logger.h>

#include <memory>
#include <string>
#include <vector>

#include "rill/core/stream_log.h"
#include "rill/media/segment_buffer.h"
#include "rill/media/segment_writer.h"

namespace rill::media {

class TsSegmentWriter final : public SegmentWriter {
 public:
  // MPEG-TS audio goes out in one PES per group of frames (TsMuxer::write_audio) spanning less
  // than this: under the 100 ms at most between two PCRs of an audio-only program (ISO 13818-1
  // 2.7.2), and under the PCR's lead on the video PID, so a group's PTS is never behind the
  // clock of the packets before it. ~4 AAC frames a PES instead of 1.
  static constexpr int64_t kAudioPesMs = 90;
  static constexpr size_t kAudioPesBytes = 16 * 1024;  // far under PES_packet_length's 65535

  // `label` starts its log lines ("hls: live/cam"); a segment never outgrows `max_segment_size`
  // (the first capacity of each is capped by it).
  TsSegmentWriter(core::StreamLog log, std::string label, size_t max_segment_size);

  std::string_view container() const override { return "MPEG-TS"; }
  bool carries(protocol::AudioCodec codec) const override {  // AAC (ADTS) and MP3
    return codec == protocol::AudioCodec::AAC || codec == protocol::AudioCodec::MP3;
  }
  bool carries(protocol::VideoCodec codec) const override {
    return codec == protocol::VideoCodec::H264 || codec == protocol::VideoCodec::HEVC;
  }
  BufferRef start_run(const SegmentTracks& tracks) override;
  void begin_segment() override;
  WriteResult write_video(const SegmentSample& s) override;
  void write_audio(const SegmentSample& s) override;  // held into the group being gathered
  BufferRef finish_segment(int64_t end_ms) override;
  uint64_t samples() const override { return samples_; }
  size_t size() const override;
  size_t capacity() const override { return seg_.capacity(); }
  const SampleCounts& counts() const override { return counts_; }

 private:
  // Writes the group being gathered as one PES.
  void flush_audio();
  void dropped(uint64_t n, const char* what, const std::string& why);

  core::StreamLog log_;
  const std::string label_;
  const size_t max_segment_size_;
  std::unique_ptr<protocol::TsMuxer> mux_;  // the run's
  SegmentBuffer seg_;                       // the segment being built
  size_t last_size_ = 0;                    // the previous segment's: the next one's first capacity
  uint64_t samples_ = 0;
  SampleCounts counts_;
  // Audio frames gathered for one PES: their bytes, and where each one is in them.
  struct HeldAudio {
    int64_t dts;
    size_t offset, size;
  };
  std::vector<uint8_t> audio_bytes_;
  std::vector<HeldAudio> audio_held_;
  std::vector<protocol::TsSample> audio_group_;  // scratch for write_audio (capacity reused)
};

}  // namespace rill::media
