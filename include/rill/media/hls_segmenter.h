#pragma once
// HlsSegmenter: turns the frames of one published stream (FLV tag bodies, on the stream's output
// timeline) into MPEG-TS segments (protocol::TsMuxer) and hands them to the worker's HlsStore.
// One segmenter lives while a publisher is attached, as one of the stream's outputs
// (stream_output.h); the store keeps what it produced.
//
// Cutting:
//  * a stream with video (H.264, HEVC) cuts at the first video keyframe at least hls.fragment after the
//    segment start, so every segment starts with an IDR and decodes on its own (what players
//    expect; cf. EXT-X-INDEPENDENT-SEGMENTS, RFC 8216 §4.3.5.1);
//  * an audio-only stream cuts on time (the first audio frame past hls.fragment);
//  * forced cut without keyframe past hls.max_fragment (0: 3 x fragment), and before a frame that
//    would push the segment past hls.max_segment_size (a single frame too big for an empty
//    segment is dropped);
//  * a timestamp jump (backwards more than 1 s or forwards more than 10 s from the newest
//    frame — the rule nginx-rtmp applies) ends the segment; the next one starts at the next
//    start point with EXT-X-DISCONTINUITY (§4.3.2.3) and a timeline rebased to continue;
//  * a new sequence header that differs from the current one (codec or parameter change) or a
//    change of the track set (audio appears, ...) restarts the muxer at the next start point,
//    again behind a discontinuity.
// The first segment waits for a video sequence header and a keyframe; a stream that shows no
// video within its first second of audio is segmented audio-only. Codecs carried: H.264 (TS
// stream_type 0x1B; fMP4 avc1), HEVC from E-RTMP hvc1 (TS 0x24 with AUD and VPS/SPS/PPS before
// each IRAP; fMP4 hvc1 + hvcC), AAC (TS: ADTS, 0x0F; fMP4 mp4a), MP3 (TS only, 0x03)
// (ISO/IEC 13818-1 Table 2-34). Other video (AV1, VP9) and audio codecs are skipped, with one log
// line each. hls.container: fmp4 writes fragmented MP4 instead (protocol/fmp4_muxer.h); with
// hls.low_latency each segment is cut further into LL-HLS parts (store.add_part).
//
// media/: no socket, no clock (timestamps come from the frames). One worker thread.
#include <spdlog/logger.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rill/config/config.h"
#include "rill/media/media_frame.h"
#include "rill/media/segment_buffer.h"
#include "rill/media/stream_key.h"
#include "rill/media/stream_output.h"
#include "rill/protocol/ts_muxer.h"

namespace rill::protocol {
struct AudioTagInfo;
class Fmp4Muxer;
}  // namespace rill::protocol

namespace rill::media {

class HlsStore;

struct HlsSegmenterStats {
  uint64_t segments = 0;         // handed to the store
  uint64_t discontinuities = 0;  // segments emitted with a discontinuity mark
  uint64_t forced_cuts = 0;      // cut without a keyframe (max_fragment or max_segment_size)
  uint64_t timestamp_jumps = 0;
  uint64_t samples_written = 0;
  uint64_t samples_skipped = 0;  // before a start point, unsupported codec, no config, stale config
  uint64_t samples_dropped = 0;  // malformed (the tag parser or the muxer threw ProtocolError)
  uint64_t samples_too_big = 0;  // alone larger than max_segment_size
};

class HlsSegmenter : public StreamOutput {
 public:
  // Opens `key` in the store (reviving a state kept from an earlier publisher).
  HlsSegmenter(HlsStore& store, StreamKey key, const config::HlsConfig& cfg, spdlog::logger& log);
  ~HlsSegmenter() override;  // finish()
  HlsSegmenter(const HlsSegmenter&) = delete;
  HlsSegmenter& operator=(const HlsSegmenter&) = delete;

  // StreamOutput
  std::string_view name() const override { return "hls"; }
  void on_frame(const FramePtr& f) override {
    if (f) on_frame(*f);
  }
  void on_stop(const PublishSession&) override { finish(); }

  // Every frame of the stream, in order (metadata is ignored).
  void on_frame(const MediaFrame& f);
  // The publisher left: the segment being built becomes the last one and the playlist ends.
  // Idempotent; on_frame does nothing afterwards.
  void finish();

  const HlsSegmenterStats& stats() const { return stats_; }
  size_t pending_bytes() const { return building_bytes(); }                        // the segment being built
  size_t buffer_capacity() const { return seg_.capacity() + ts_seg_.capacity(); }  // memory its builders hold

  static constexpr int64_t kMaxBackwardJumpMs = 1000;
  static constexpr int64_t kMaxForwardJumpMs = 10000;
  static constexpr int64_t kAudioOnlyProbeMs = 1000;
  // A part is cut at the first sample at least part - this after its start, so that parts stay
  // within the part target with interleaved audio (AAC frames are ~21-23 ms).
  static constexpr int64_t kPartSlackMs = 25;
  // MPEG-TS audio goes out in one PES per group of frames (TsMuxer::write_audio) spanning less
  // than this: under the 100 ms at most between two PCRs of an audio-only program (ISO 13818-1
  // 2.7.2), and under the PCR's lead on the video PID, so a group's PTS is never behind the
  // clock of the packets before it. ~4 AAC frames a PES instead of 1.
  static constexpr int64_t kAudioPesMs = 90;
  static constexpr size_t kAudioPesBytes = 16 * 1024;  // far under PES_packet_length's 65535

 private:
  void on_video(const MediaFrame& f);
  // An AVC or HEVC (E-RTMP hvc1) sequence header.
  void on_video_config(std::span<const uint8_t> record, bool hevc);
  void on_audio(const MediaFrame& f);
  // Follows the audio codec and its configuration; true when `ai` is a coded frame of a codec the
  // segments carry (AAC, MP3).
  bool follow_audio_codec(const protocol::AudioTagInfo& ai, std::span<const uint8_t> data);
  void on_aac_config(std::span<const uint8_t> asc);  // an AAC AudioSpecificConfig
  // Counts a sample of a codec the segments do not carry; true the first time (`warned` is the
  // kind's warn-once flag), when the caller logs why.
  bool skip_codec(bool& warned);
  // Maps a coded frame's 32-bit timestamp onto the 64-bit segment timeline; handles jumps.
  int64_t map_time(uint32_t ts);
  // Runs the cut rules for a coded sample at `dts`; false when the sample is not to be written.
  bool place(int64_t dts, bool video, bool keyframe, size_t bound);
  protocol::TsStreams desired() const;
  bool can_start(bool video, bool keyframe, int64_t dts) const;
  void start_segment(int64_t dts);
  void close_segment(int64_t end_dts);
  void new_ts_muxer(const protocol::TsStreams& d);
  void new_fmp4_muxer(const protocol::TsStreams& d);  // and hands its init section to the store
  size_t building_bytes() const;
  void flush_part(int64_t end_dts);  // LL-HLS: the samples so far become a part (store.add_part)
  void write(const protocol::TsSample& s);
  // MPEG-TS audio: held into the group being gathered, written when the group is full
  // (kAudioPesMs, kAudioPesBytes) or the segment closes.
  void hold_audio(int64_t dts, std::span<const uint8_t> data);
  void flush_audio();
  // A track's codec or configuration changed: once a muxer runs, that kind is stale and the muxer
  // restarts at the next start point.
  void config_changed(bool video);
  int64_t frame_step() const;
  void note_step(bool video, int64_t dts);
  size_t bound_video(size_t n) const;
  static size_t bound_audio(size_t n);

  HlsStore& store_;
  StreamKey key_;
  std::string key_text_;  // "app/name", for logs
  spdlog::logger& log_;
  int64_t fragment_ms_, max_fragment_ms_;
  size_t max_segment_size_;
  bool finished_ = false;

  // Codec configuration as last received.
  std::vector<uint8_t> avc_record_, aac_asc_;  // avc_record_: the video record, AVC or HEVC
  bool avc_ok_ = false, aac_ok_ = false;       // avc_ok_: a usable video record
  bool hevc_ = false;                          // the video record is an HEVCDecoderConfigurationRecord
  size_t avc_ps_bytes_ = 0;                    // SPS + PPS with start codes (repeated before each IDR)
  uint8_t avc_length_size_ = 4;
  bool mp3_ = false;         // the audio is MP3 (else AAC when aac_ok_)
  bool video_seen_ = false;  // an AVC header or frame arrived
  bool warned_video_ = false, warned_audio_ = false, warned_drop_ = false;

  const bool fmp4_;         // hls.container: fmp4 (else MPEG-TS)
  const bool low_latency_;  // hls.low_latency: parts of part_ms_
  const int64_t part_ms_;
  int64_t part_start_ = 0;                          // dts of the first sample of the part being built
  std::optional<protocol::TsStreams> program_;      // the tracks of the current run
  std::unique_ptr<protocol::TsMuxer> mux_;          // the current run's muxer (recreated on restart), or
  std::unique_ptr<protocol::Fmp4Muxer> fmux_;       // with container fmp4 this one
  bool restart_pending_ = false;                    // configuration changed: new muxer at the next start
  bool video_stale_ = false, audio_stale_ = false;  // mux_ has an outdated config for that kind
  bool wait_keyframe_ = false;                      // a video sample was lost: skip video to a keyframe
  bool discontinuity_next_ = false;
  bool produced_any_ = false;  // this segmenter started at least one segment

  // The segment being built.
  bool seg_open_ = false;
  std::vector<uint8_t> seg_;  // fMP4: the segment (or LL-HLS parts) being built
  SegmentBuffer ts_seg_;      // MPEG-TS: the segment, built in the buffer it is served from
  size_t last_ts_size_ = 0;   // the previous TS segment's size: the next one's first capacity
  int64_t seg_start_ = 0;
  uint64_t seg_samples_ = 0;
  // MPEG-TS audio frames gathered for one PES: their bytes, and where each one is in them.
  struct HeldAudio {
    int64_t dts;
    size_t offset, size;
  };
  std::vector<uint8_t> audio_bytes_;
  std::vector<HeldAudio> audio_held_;
  std::vector<protocol::TsSample> audio_group_;  // scratch for write_audio (capacity reused)

  // Timeline.
  bool have_time_ = false;
  uint32_t last_in_ = 0;  // 32-bit timestamp of the newest frame
  int64_t max_dts_ = 0;   // its position on the segment timeline
  // Last dts and step of each kind (the step estimates the duration of a segment's last frame).
  bool have_video_dts_ = false, have_audio_dts_ = false;
  int64_t last_video_dts_ = 0, last_audio_dts_ = 0;
  int64_t video_step_ = 40, audio_step_ = 23;
  bool have_first_audio_ = false;
  int64_t first_audio_dts_ = 0;

  HlsSegmenterStats stats_;
};

}  // namespace rill::media
