#pragma once
// HlsSegmenter: turns the frames of one published stream (on the stream's output timeline, with the
// facts Stream::publish read from their tag headers) into HLS segments and hands them to the
// worker's HlsStore. It is a segment plan — the cutting rules below, the codec configuration, the
// timeline — and one SegmentWriter (segment_writer.h) that makes the container's bytes: MPEG-TS
// (TsSegmentWriter) or, with hls.container: fmp4 or hls.low_latency, fMP4 (Fmp4SegmentWriter).
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
//    change of the track set (audio appears, ...) starts a new run (a fresh muxer, in fMP4 a new
//    init section) at the next start point, again behind a discontinuity.
// The first segment waits for a video sequence header and a keyframe; a stream that shows no
// video within its first second of audio is segmented audio-only. Codecs carried: H.264 (TS
// stream_type 0x1B; fMP4 avc1), HEVC from E-RTMP hvc1 (TS 0x24 with AUD and VPS/SPS/PPS before
// each IRAP; fMP4 hvc1 + hvcC), AAC (TS: ADTS, 0x0F; fMP4 mp4a), MP3 (TS only, 0x03)
// (ISO/IEC 13818-1 Table 2-34), and fMP4 only: AV1 (av01 + av1C), VP9 (vp09 + vpcC), Opus
// (Opus + dOps). A stream with one of those under hls.container: ts is segmented in fMP4 from its
// configuration on (one log line; use_fmp4). Other codecs are skipped, with one log line each.
// With hls.low_latency each segment is cut further into LL-HLS parts (store.add_part).
// A rendition of a group (hls.variants, media/rendition_group.h; docs/abr.md) is cut by the
// group's clock instead: at the first keyframe at or after the next multiple of hls.fragment on
// the stream's timeline (k x fragment), its first segment numbered k (store.align_first_sequence),
// so renditions whose encoders share timestamps and aligned keyframes get equal cut points and
// sequence numbers; it also gives the store its traits (CODECS, size, frame rate) per segment.
// A multitrack publish (E-RTMP v2) makes one rendition per video track the same way, all on the
// group's clock: hls_track_renditions.h.
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
#include "rill/core/stream_log.h"
#include "rill/media/media_frame.h"
#include "rill/media/segment_writer.h"
#include "rill/media/stream_key.h"
#include "rill/media/stream_output.h"

namespace rill::media {

class HlsStore;
class RewindLink;
class HlsTrackRenditions;

struct HlsSegmenterStats {
  uint64_t segments = 0;         // handed to the store
  uint64_t discontinuities = 0;  // segments emitted with a discontinuity mark
  uint64_t forced_cuts = 0;      // cut without a keyframe (max_fragment or max_segment_size)
  uint64_t timestamp_jumps = 0;
  uint64_t samples_written = 0;
  uint64_t samples_skipped = 0;  // before a start point, unsupported codec, no config, stale config
  uint64_t samples_dropped = 0;  // malformed (the muxer threw ProtocolError)
  uint64_t samples_too_big = 0;  // alone larger than max_segment_size
};

class HlsSegmenter : public StreamOutput {
 public:
  // Opens `key` in the store (reviving a state kept from an earlier publisher). `group_clock`:
  // cut by the group's clock although `key` is no suffix rendition (a multitrack publish's track).
  // `cfg` outlives the segmenter (the stream's app configuration).
  HlsSegmenter(HlsStore& store, StreamKey key, const config::HlsConfig& cfg, spdlog::logger& log,
               bool group_clock = false);
  ~HlsSegmenter() override;  // finish()
  HlsSegmenter(const HlsSegmenter&) = delete;
  HlsSegmenter& operator=(const HlsSegmenter&) = delete;

  // StreamOutput
  std::string_view name() const override { return "hls"; }
  void on_frame(const FramePtr& f) override {
    if (f) on_frame(*f);
  }
  void on_stop(const PublishSession&) override { finish(); }
  // A video track N > 0 of a multitrack publish: the first one, before this segmenter's first
  // segment, turns the stream into renditions (hls_track_renditions.h); after it, HLS stays
  // track 0's (one log line).
  void on_track_frame(const FramePtr& f) override;

  // Every frame of the stream, in order, as Stream::publish made it (metadata is ignored).
  void on_frame(const MediaFrame& f);
  // The publisher left: the segment being built becomes the last one and the playlist ends.
  // Idempotent; on_frame does nothing afterwards.
  void finish();

  // hls.rewind: tells the recorder where segments end and where frames lie (media/rewind_link.h).
  void set_rewind(std::shared_ptr<RewindLink> link) { rewind_ = std::move(link); }

  HlsSegmenterStats stats() const;                                // the plan's and the writer's
  size_t pending_bytes() const { return writer_->size(); }        // the segment being built
  size_t buffer_capacity() const { return writer_->capacity(); }  // memory its builders hold
  // Whether the segments carry audio now.
  bool carries_audio() const { return run_.tracks && run_.tracks->has_audio; }
  // Takes `other`'s audio configuration, as if its audio sequence header had come here too (a
  // track's rendition carries track 0's audio, whose header came before the track's first frame).
  void share_audio_config(const HlsSegmenter& other) { audio_ = other.audio_; }

  static constexpr int64_t kMaxBackwardJumpMs = 1000;
  static constexpr int64_t kMaxForwardJumpMs = 10000;
  static constexpr int64_t kAudioOnlyProbeMs = 1000;
  // A part is cut at the first sample at least part - this after its start, so that parts stay
  // within the part target with interleaved audio (AAC frames are ~21-23 ms).
  static constexpr int64_t kPartSlackMs = 25;

 private:
  // The plan's limits, from the configuration.
  struct Limits {
    int64_t fragment_ms, max_fragment_ms;
    size_t max_segment_size;
    bool low_latency;  // LL-HLS: parts of part_ms
    int64_t part_ms;
    bool aligned;  // a rendition of a group: cut at multiples of fragment_ms (the group's clock)
  };
  // The codec configuration as last received.
  struct VideoConfig {
    std::vector<uint8_t> record;  // AVC, HEVC, AV1 or VP9 decoder configuration record
    bool usable = false;          // the record parsed
    protocol::VideoCodec codec = protocol::VideoCodec::H264;
    size_t ps_bytes = 0;             // parameter sets with start codes (repeated before each IDR)
    uint8_t length_size = 4;         // of the NAL unit length fields
    uint32_t width = 0, height = 0;  // VP9: read from the first key frame
  };
  struct AudioConfig {
    protocol::AudioCodec codec = protocol::AudioCodec::AAC;
    std::vector<uint8_t> record;  // AAC AudioSpecificConfig or Opus identification header
    bool usable = false;          // MP3, or the record parsed (AAC: and ADTS can carry it)
  };
  // The current run: segments written with one writer configuration (start_run).
  struct Run {
    std::optional<protocol::TsStreams> tracks;      // nothing before the first segment
    bool restart_pending = false;                   // configuration changed: new run at the next start
    bool video_stale = false, audio_stale = false;  // the run has an outdated config for that kind
    bool wait_keyframe = false;                     // a video sample was lost: skip video to a keyframe
    bool discontinuity_next = false;                // the next segment is marked EXT-X-DISCONTINUITY
    bool produced_any = false;                      // this segmenter started at least one segment
  };
  struct Building {
    bool open = false;
    int64_t start = 0;           // dts of the segment's first sample
    int64_t clock_start = 0;     // its presentation time: where it lies on the group's clock
    int64_t part_start = 0;      // dts of the first sample of the part being built
    uint32_t video_samples = 0;  // written so far (the measured frame rate of a rendition)
  };
  // Last dts and step of one kind (the step estimates the duration of a segment's last frame).
  struct KindClock {
    bool have = false;
    int64_t last = 0;
    int64_t step = 0;
  };
  struct Timeline {
    bool started = false;
    uint32_t last_in = 0;  // 32-bit timestamp of the newest frame
    int64_t max_dts = 0;   // its position on the segment timeline
    KindClock video{.step = 40}, audio{.step = 23};
    std::optional<int64_t> first_audio;  // dts of the first audio sample (the audio-only probe)
  };
  struct Warned {  // one log line each
    bool video = false, audio = false, too_big = false, fmp4 = false, tracks = false;
  };

  static Limits limits_of(const config::HlsConfig& cfg, const std::string& name, bool group_clock);
  // The first frame of another video track: this segmenter becomes track 0's rendition
  // (NAME_track0, on the group's clock) and NAME the renditions' multivariant playlist.
  void become_track_renditions();
  void on_video(const MediaFrame& f);
  // An AVC, HEVC, AV1 or VP9 sequence header.
  void on_video_config(std::span<const uint8_t> record, protocol::VideoCodec codec);
  void on_audio(const MediaFrame& f);
  // Follows the audio codec and its configuration; true when `f` is a coded frame of a codec the
  // segments carry (AAC, MP3, Opus).
  bool follow_audio_codec(const MediaFrame& f);
  // An AAC AudioSpecificConfig or an Opus identification header.
  void on_audio_config(std::span<const uint8_t> record, protocol::AudioCodec codec);
  // A codec MPEG-TS does not carry under a TS writer: the open segment ends and fMP4 takes over.
  void use_fmp4_for(const char* codec);
  // Counts a sample of a codec the segments do not carry; true the first time (`warned` is the
  // kind's warn-once flag), when the caller logs why.
  bool skip_codec(bool& warned);
  // Maps a coded frame's 32-bit timestamp onto the 64-bit segment timeline; handles jumps.
  int64_t map_time(uint32_t ts);
  // Runs the cut rules for a coded sample at `dts`, presented at `pts`; false when the sample is
  // not to be written.
  bool place(int64_t dts, int64_t pts, bool video, bool keyframe, size_t bound);
  bool cut_due(int64_t dts, int64_t pts, bool start_point, size_t bound);  // counts a forced cut
  // Aligned: the slot (k) of a time on the group's clock, k x fragment <= t < (k + 1) x fragment.
  int64_t slot_of(int64_t dts) const;
  void note_traits(double duration_s);  // aligned: the rendition's traits after a segment
  protocol::TsStreams desired() const;
  bool can_start(bool video, bool keyframe, int64_t dts) const;
  void start_run(const protocol::TsStreams& d);  // and hands its init section to the store
  void start_segment(int64_t dts, int64_t pts);
  void close_segment(int64_t end_dts);
  void cut_part(int64_t end_dts);  // LL-HLS: the samples so far become a part (store.add_part)
  void write(bool video, const SegmentSample& s);
  // A track's codec or configuration changed: once a run started, that kind is stale and the run
  // restarts at the next start point.
  void config_changed(bool video);
  int64_t frame_step() const;
  static void note_step(KindClock& k, int64_t dts);

  HlsStore& store_;
  const config::HlsConfig& cfg_;
  StreamKey key_;
  std::string key_text_;  // "app/name", for logs
  spdlog::logger& log_;
  core::StreamLog stream_log() const { return {log_, key_text_}; }  // log_, about this stream
  Limits limits_;  // aligned turns on in become_track_renditions
  bool finished_ = false;
  VideoConfig video_;
  AudioConfig audio_;
  Run run_;
  Building seg_;
  Timeline time_;
  Warned warned_;
  // Chosen from the configuration; replaced once by an fMP4 writer for AV1, VP9 or Opus (use_fmp4_for).
  std::unique_ptr<SegmentWriter> writer_;
  HlsSegmenterStats stats_;  // the plan's counts (the writer keeps the samples')
  std::shared_ptr<RewindLink> rewind_;
  std::unique_ptr<HlsTrackRenditions> tracks_;  // a multitrack publish's other renditions
};

}  // namespace rill::media
