#include "rill/media/hls_segmenter.h"

#include <algorithm>
#include <cmath>

#include "rill/media/fmp4_segment_writer.h"
#include "rill/media/hls_store.h"
#include "rill/media/hls_track_renditions.h"
#include "rill/media/rendition_group.h"
#include "rill/media/rendition_traits.h"
#include "rill/media/rewind_link.h"
#include "rill/media/ts_segment_writer.h"
#include "rill/protocol/aac.h"
#include "rill/protocol/av1.h"
#include "rill/protocol/avc.h"
#include "rill/protocol/error.h"
#include "rill/protocol/hevc.h"
#include "rill/protocol/opus.h"
#include "rill/protocol/vp9.h"

namespace rill::media {

namespace {

constexpr int64_t kMaxStepMs = 1000;

bool same_bytes(std::span<const uint8_t> a, const std::vector<uint8_t>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

std::unique_ptr<SegmentWriter> make_writer(const config::HlsConfig& cfg, size_t max_segment_size,
                                           const core::StreamLog& log, const std::string& key_text) {
  std::string label = "hls: " + key_text;
  // LL-HLS parts are fMP4 fragments (RFC 8216bis §4.4.4.9): low_latency implies fmp4.
  if (cfg.container == config::HlsContainer::Fmp4 || cfg.low_latency)
    return std::make_unique<Fmp4SegmentWriter>(log, std::move(label));
  return std::make_unique<TsSegmentWriter>(log, std::move(label), max_segment_size);
}

}  // namespace

HlsSegmenter::HlsSegmenter(HlsStore& store, StreamKey key, const config::HlsConfig& cfg, spdlog::logger& log,
                           bool group_clock)
    : store_(store),
      cfg_(cfg),
      key_(std::move(key)),
      key_text_(key_.str()),
      log_(log),
      limits_(limits_of(cfg, key_.name, group_clock)),
      writer_(make_writer(cfg, limits_.max_segment_size, stream_log(), key_text_)) {
  store_.open(key_, cfg);
}

HlsSegmenter::~HlsSegmenter() { finish(); }

HlsSegmenter::Limits HlsSegmenter::limits_of(const config::HlsConfig& cfg, const std::string& name,
                                             bool group_clock) {
  Limits l;
  l.fragment_ms = std::max<int64_t>(1, cfg.fragment.count());
  l.max_fragment_ms = cfg.max_fragment.count() > 0
                          ? std::max<int64_t>(cfg.max_fragment.count(), l.fragment_ms)
                          : 3 * l.fragment_ms;
  l.max_segment_size = std::max<size_t>(cfg.max_segment_size, 4 * protocol::TsMuxer::kPacketSize);
  l.low_latency = cfg.low_latency;
  l.part_ms = std::max<int64_t>(1, cfg.part.count());
  l.aligned = group_clock || is_rendition(name, cfg.variant_suffixes);
  return l;
}

HlsSegmenterStats HlsSegmenter::stats() const {
  HlsSegmenterStats s = stats_;
  const SampleCounts& c = writer_->counts();
  s.samples_written += c.written;
  s.samples_skipped += c.skipped;
  s.samples_dropped += c.dropped;
  return s;
}

void HlsSegmenter::finish() {
  if (finished_) return;
  finished_ = true;
  if (seg_.open) close_segment(time_.max_dts + frame_step());
  store_.close(key_);
  if (tracks_) tracks_->finish();
  const HlsSegmenterStats s = stats();
  stream_log().info(
      "hls: {} segmenter done: {} segments ({} discontinuities, {} forced cuts, {} timestamp jumps), "
      "{} samples written, {} skipped, {} malformed, {} too big",
      key_text_, s.segments, s.discontinuities, s.forced_cuts, s.timestamp_jumps, s.samples_written,
      s.samples_skipped, s.samples_dropped, s.samples_too_big);
}

void HlsSegmenter::on_frame(const MediaFrame& f) {
  if (finished_) return;
  if (f.type == MediaType::Video) {
    on_video(f);
  } else if (f.type == MediaType::Audio) {
    on_audio(f);
    if (tracks_) tracks_->on_audio(f);
  }
  // Script data (metadata) has no place in the segments.
}

void HlsSegmenter::on_track_frame(const FramePtr& f) {
  if (finished_ || !f || f->type != MediaType::Video || f->track == 0) return;
  if (!tracks_) {
    if (run_.produced_any) {
      if (!std::exchange(warned_.tracks, true)) {
        stream_log().warn("hls: {}: video track {} came after the first segment; HLS is track 0's only",
                          key_text_, f->track);
      }
      return;
    }
    become_track_renditions();
  }
  tracks_->on_track_video(*f);
}

void HlsSegmenter::become_track_renditions() {
  StreamKey group = key_;
  key_ = StreamKey{group.app, track_rendition_name(group.name, 0)};
  key_text_ = key_.str();
  store_.open(key_, cfg_);
  if (rewind_) rewind_->follow(key_);
  limits_.aligned = true;
  stream_log().info("hls: {}: multitrack publish: {}.m3u8 lists its video tracks, track 0 is {}.m3u8",
                    group.str(), group.name, key_.name);
  tracks_ = std::make_unique<HlsTrackRenditions>(store_, std::move(group), cfg_, log_, *this);
}

// ---------------------------------------------------------------------------------------------
// input

namespace {

std::optional<protocol::VideoCodec> video_codec_of(FrameCodec c) {
  switch (c) {
    case FrameCodec::H264:
      return protocol::VideoCodec::H264;
    case FrameCodec::HEVC:
      return protocol::VideoCodec::HEVC;
    case FrameCodec::AV1:
      return protocol::VideoCodec::AV1;
    case FrameCodec::VP9:
      return protocol::VideoCodec::VP9;
    default:
      return std::nullopt;
  }
}

const char* name_of(protocol::VideoCodec c) {
  switch (c) {
    case protocol::VideoCodec::H264:
      return "AVC";
    case protocol::VideoCodec::HEVC:
      return "HEVC";
    case protocol::VideoCodec::AV1:
      return "AV1";
    case protocol::VideoCodec::VP9:
      return "VP9";
  }
  return "?";
}

}  // namespace

void HlsSegmenter::on_video(const MediaFrame& f) {
  if (f.codec == FrameCodec::None) return;  // a command frame, or multitrack
  const std::optional<protocol::VideoCodec> codec = video_codec_of(f.codec);
  if (!codec) {
    if ((f.coded || f.sequence_header) && skip_codec(warned_.video)) {
      stream_log().warn("hls: {}: {} video is not supported in HLS segments here; segmenting without video",
                        key_text_, codec_description(f));
    }
    return;
  }
  const std::span<const uint8_t> data = f.data();
  if (f.sequence_header) {
    on_video_config(data, *codec);
    return;
  }
  if (!f.coded) return;                           // end of sequence
  if (video_.usable && *codec != video_.codec) {  // coded frames of another codec than the configuration's
    ++stats_.samples_skipped;
    return;
  }
  const int64_t dts = map_time(f.timestamp);
  if (rewind_) rewind_->mapped(f.timestamp, dts);
  note_step(time_.video, dts);
  if (!video_.usable) {
    ++stats_.samples_skipped;
    return;
  }
  if (video_.codec == protocol::VideoCodec::VP9 && f.keyframe && video_.width == 0) {
    // vpcC has no frame size; the sample entry's comes from the first key frame (VP9 §6.2).
    try {
      if (const auto size = protocol::vp9_key_frame_size(data)) {
        video_.width = size->width;
        video_.height = size->height;
      }
    } catch (const protocol::ProtocolError& e) {
      stream_log().debug("hls: {}: VP9 key frame size unreadable ({})", key_text_, e.what());
    }
  }
  const size_t bound = video_sample_bound(data.size(), video_.ps_bytes, video_.length_size);
  if (bound + kSegmentStartBytes > limits_.max_segment_size) {
    ++stats_.samples_too_big;
    run_.wait_keyframe = true;  // what follows refers to the lost frame
    if (!warned_.too_big) {
      warned_.too_big = true;
      stream_log().warn("hls: {}: dropped a {} byte video frame larger than max_segment_size {}", key_text_,
                        data.size(), limits_.max_segment_size);
    }
    return;
  }
  // A coded frame's keyframe flag is its own (a sequence header's is not: it returned above).
  if (!place(dts, dts + f.composition_time, true, f.keyframe, bound)) {
    ++stats_.samples_skipped;
    return;
  }
  write(true, SegmentSample{dts, f.composition_time, f.keyframe, data});
}

void HlsSegmenter::on_video_config(std::span<const uint8_t> record, protocol::VideoCodec codec) {
  if (video_.usable && codec == video_.codec && same_bytes(record, video_.record))
    return;  // repeated, nothing changed
  video_.record.assign(record.begin(), record.end());
  video_.codec = codec;
  video_.ps_bytes = 0;
  video_.length_size = 4;
  video_.width = video_.height = 0;
  auto ps_bytes = [](const auto&... lists) {
    size_t n = 0;
    (..., [&] {
      for (const auto& p : lists) n += 4 + p.size();
    }());
    return n;
  };
  try {
    switch (codec) {
      case protocol::VideoCodec::HEVC: {
        const protocol::HevcConfig c = protocol::parse_hevc_config(record);
        video_.length_size = c.nalu_length_size;
        video_.ps_bytes = ps_bytes(c.vps, c.sps, c.pps);
        break;
      }
      case protocol::VideoCodec::H264: {
        const protocol::AvcConfig c = protocol::parse_avc_config(record);
        video_.length_size = c.nalu_length_size;
        video_.ps_bytes = ps_bytes(c.sps, c.pps);
        break;
      }
      case protocol::VideoCodec::AV1:
        protocol::parse_av1_config(record);
        break;
      case protocol::VideoCodec::VP9:
        protocol::parse_vpc_config(record);
        break;
    }
    video_.usable = true;
  } catch (const protocol::ProtocolError& e) {
    video_.usable = false;
    stream_log().warn("hls: {}: unusable {} sequence header ({}); video skipped until a valid one", key_text_,
                      name_of(codec), e.what());
  }
  if (video_.usable && !writer_->carries(codec)) use_fmp4_for(name_of(codec));
  config_changed(true);
}

void HlsSegmenter::on_audio(const MediaFrame& f) {
  if (!follow_audio_codec(f)) return;
  const int64_t dts = map_time(f.timestamp);
  if (rewind_) rewind_->mapped(f.timestamp, dts);
  note_step(time_.audio, dts);
  if (!audio_.usable) {
    ++stats_.samples_skipped;
    return;
  }
  if (!writer_->carries(audio_.codec)) {  // MP3 in fMP4
    if (skip_codec(warned_.audio)) {
      stream_log().warn("hls: {}: MP3 audio is not carried in {} segments; segmenting without audio",
                        key_text_, writer_->container());
    }
    return;
  }
  if (!time_.first_audio) time_.first_audio = dts;
  const std::span<const uint8_t> data = f.data();
  const size_t bound = audio_sample_bound(data.size());
  if (bound + kSegmentStartBytes > limits_.max_segment_size) {
    ++stats_.samples_too_big;
    return;
  }
  if (!place(dts, dts, false, false, bound)) {
    ++stats_.samples_skipped;
    return;
  }
  write(false, SegmentSample{.dts_ms = dts, .data = data});
}

bool HlsSegmenter::follow_audio_codec(const MediaFrame& f) {
  protocol::AudioCodec codec = protocol::AudioCodec::AAC;
  switch (f.codec) {
    case FrameCodec::AAC:
      codec = protocol::AudioCodec::AAC;
      break;
    case FrameCodec::Opus:
      codec = protocol::AudioCodec::Opus;
      break;
    case FrameCodec::MP3:
      if (!f.coded) return false;
      if (audio_.codec != protocol::AudioCodec::MP3 || !audio_.usable) {
        audio_.codec = protocol::AudioCodec::MP3;
        audio_.usable = true;  // MP3 frames carry their own headers
        config_changed(false);
      }
      return true;
    default:
      if ((f.coded || f.sequence_header) && skip_codec(warned_.audio)) {
        stream_log().warn("hls: {}: {} audio is not supported in HLS segments here; segmenting without audio",
                          key_text_, codec_description(f));
      }
      return false;
  }
  if (f.sequence_header) {
    on_audio_config(f.data(), codec);
    return false;
  }
  if (!f.coded) return false;
  if (audio_.codec != codec) {
    // Frames of another codec without their configuration: nothing to frame them with. After MP3
    // the track waits for that configuration; a configured AAC or Opus track keeps its codec.
    if (audio_.codec == protocol::AudioCodec::MP3) {
      audio_.codec = codec;
      audio_.usable = false;
      config_changed(false);
      return true;  // counted as skipped by on_audio
    }
    ++stats_.samples_skipped;
    return false;
  }
  return true;
}

void HlsSegmenter::on_audio_config(std::span<const uint8_t> record, protocol::AudioCodec codec) {
  if (audio_.usable && audio_.codec == codec && same_bytes(record, audio_.record)) return;  // repeated
  audio_.record.assign(record.begin(), record.end());
  audio_.codec = codec;
  const bool opus = codec == protocol::AudioCodec::Opus;
  try {
    if (opus)
      protocol::parse_opus_head(record);
    else
      protocol::check_adts_compatible(protocol::parse_aac_config(record));
    audio_.usable = true;
  } catch (const protocol::ProtocolError& e) {
    audio_.usable = false;
    stream_log().warn("hls: {}: unusable {} sequence header ({}); audio skipped until a valid one", key_text_,
                      opus ? "Opus" : "AAC", e.what());
  }
  if (audio_.usable && !writer_->carries(codec)) use_fmp4_for("Opus");
  config_changed(false);
}

void HlsSegmenter::use_fmp4_for(const char* codec) {
  // RFC 8216 §3.3: fMP4 segments may carry any codec with an ISO BMFF binding; MPEG-TS here carries
  // none of AV1, VP9, Opus. The segment being built ends; the next run starts in fMP4 (a new
  // init section behind a discontinuity), and stays fMP4 while this publisher lasts.
  if (seg_.open) close_segment(time_.max_dts + frame_step());
  const SampleCounts& c = writer_->counts();
  stats_.samples_written += c.written;
  stats_.samples_skipped += c.skipped;
  stats_.samples_dropped += c.dropped;
  writer_ = std::make_unique<Fmp4SegmentWriter>(stream_log(), "hls: " + key_text_);
  if (run_.tracks) run_.restart_pending = true;
  if (!warned_.fmp4) {
    warned_.fmp4 = true;
    stream_log().info(
        "hls: {}: {} is not carried in MPEG-TS segments; this stream's HLS is fMP4 (hls.container ts)",
        key_text_, codec);
  }
}

bool HlsSegmenter::skip_codec(bool& warned) {
  ++stats_.samples_skipped;
  if (warned) return false;
  warned = true;
  return true;
}

// ---------------------------------------------------------------------------------------------
// timeline

int64_t HlsSegmenter::frame_step() const {
  if (run_.tracks && run_.tracks->has_video && time_.video.have) return time_.video.step;
  return time_.audio.have ? time_.audio.step : time_.video.step;
}

void HlsSegmenter::note_step(KindClock& k, int64_t dts) {
  if (k.have && dts > k.last && dts - k.last <= kMaxStepMs) k.step = dts - k.last;
  k.have = true;
  k.last = dts;
}

int64_t HlsSegmenter::map_time(uint32_t ts) {
  Timeline& t = time_;
  if (!t.started) {
    t.started = true;
    t.last_in = ts;
    t.max_dts = ts;  // the stream's timeline continues across a republish, so does ours
    return t.max_dts;
  }
  // 32-bit modular difference to the newest frame: a wrap of the FLV timestamp is no jump.
  const int64_t d = static_cast<int32_t>(ts - t.last_in);
  if (d > kMaxForwardJumpMs || d < -kMaxBackwardJumpMs) {
    // The publisher's clock jumped. End the segment where the media ended and continue the
    // timeline right after it; the next segment is marked discontinuous (RFC 8216 §4.3.2.3:
    // "a change in ... timestamp sequence").
    ++stats_.timestamp_jumps;
    const int64_t resume = t.max_dts + frame_step();
    stream_log().info("hls: {}: timestamp jump of {} ms (at {}), discontinuity", key_text_, d, ts);
    if (seg_.open) close_segment(resume);
    if (run_.produced_any) run_.discontinuity_next = true;
    t.last_in = ts;
    t.max_dts = resume;
    t.video.have = t.audio.have = false;
    return t.max_dts;
  }
  if (d > 0) {
    t.last_in = ts;
    t.max_dts += d;
    return t.max_dts;
  }
  return t.max_dts + d;  // a little behind the newest (audio/video interleaving)
}

// ---------------------------------------------------------------------------------------------
// cutting

protocol::TsStreams HlsSegmenter::desired() const {
  protocol::TsStreams s;
  s.has_video = video_.usable;
  s.has_audio = audio_.usable && writer_->carries(audio_.codec);
  s.audio = audio_.codec;
  s.video = video_.codec;
  return s;
}

void HlsSegmenter::config_changed(bool video) {
  if (!run_.tracks) return;  // the first run is made with whatever is current
  (video ? run_.video_stale : run_.audio_stale) = true;
  run_.restart_pending = true;
}

bool HlsSegmenter::can_start(bool video, bool keyframe, int64_t dts) const {
  const protocol::TsStreams d = desired();
  if (d.has_video) return video && keyframe;
  if (!d.has_audio || video) return false;
  // Audio only: unless this segmenter is already running audio only, give a video track a
  // moment to show up (an encoder may send its audio header first).
  return run_.produced_any || (time_.first_audio && dts - *time_.first_audio >= kAudioOnlyProbeMs);
}

bool HlsSegmenter::place(int64_t dts, int64_t pts, bool video, bool keyframe, size_t bound) {
  const bool start_point = can_start(video, keyframe, dts);
  if (!seg_.open) {
    if (!start_point) return false;
    start_segment(dts, pts);
  } else if ((run_.restart_pending && start_point) || cut_due(dts, pts, start_point, bound)) {
    close_segment(dts);
    start_segment(dts, pts);
  }
  if (video) {
    if (keyframe) run_.wait_keyframe = false;
    if (run_.video_stale || run_.wait_keyframe) return false;
  } else if (run_.audio_stale) {
    return false;
  }
  return true;
}

int64_t HlsSegmenter::slot_of(int64_t t) const {
  const int64_t f = limits_.fragment_ms;
  return t >= 0 ? t / f : -((-t + f - 1) / f);  // floor
}

bool HlsSegmenter::cut_due(int64_t dts, int64_t pts, bool start_point, size_t bound) {
  const int64_t age = dts - seg_.start;
  // A rendition cuts at the first start point presented at or after the next slot boundary (the
  // group's clock: every rendition with a keyframe there cuts at the same media time, whatever
  // its encoder's frame reordering delay); others at least fragment after the segment start.
  const bool due = limits_.aligned ? pts >= (slot_of(seg_.clock_start) + 1) * limits_.fragment_ms
                                   : age >= limits_.fragment_ms;
  if (start_point && due) return true;
  const bool forced = age >= limits_.max_fragment_ms ||  // no keyframe in time
                      (writer_->samples() > 0 &&         // the segment would outgrow its cap
                       writer_->size() + bound > limits_.max_segment_size);
  if (forced) ++stats_.forced_cuts;
  return forced;
}

void HlsSegmenter::start_run(const protocol::TsStreams& d) {
  // A new run (tracks or codec configuration changed): new continuity counters and maybe a new
  // PMT (or a new fMP4 init section), so the segment is a discontinuity.
  if (run_.tracks) run_.discontinuity_next = true;
  run_.tracks = d;
  SegmentTracks t{d, {}, {}, {}, video_.width, video_.height};
  if (d.has_video) t.video_record = video_.record;
  if (d.has_audio && d.audio == protocol::AudioCodec::AAC) t.audio_asc = audio_.record;
  if (d.has_audio && d.audio == protocol::AudioCodec::Opus) t.opus_head = audio_.record;
  if (BufferRef init = writer_->start_run(t)) store_.set_init(key_, std::move(init));
  run_.restart_pending = run_.video_stale = run_.audio_stale = false;
  run_.wait_keyframe = d.has_video;  // video resumes at a keyframe
}

void HlsSegmenter::start_segment(int64_t dts, int64_t pts) {
  const protocol::TsStreams d = desired();
  if (!run_.tracks || run_.restart_pending || *run_.tracks != d) start_run(d);
  writer_->begin_segment();
  // Aligned: a fresh playlist starts at the number of its first cut slot, as the group's other
  // renditions do (after a republish within the grace the numbering just goes on).
  if (limits_.aligned && !run_.produced_any && slot_of(pts) > 0)
    store_.align_first_sequence(key_, static_cast<uint64_t>(slot_of(pts)));
  seg_.start = dts;
  seg_.clock_start = pts;
  seg_.video_samples = 0;
  seg_.open = true;
  run_.produced_any = true;
}

void HlsSegmenter::cut_part(int64_t end_dts) {
  std::optional<SegmentPart> part = writer_->cut_part(std::max(end_dts, seg_.part_start));
  if (!part) return;
  const double duration_s = static_cast<double>(std::max<int64_t>(0, end_dts - seg_.part_start)) / 1000.0;
  store_.add_part(key_, std::move(part->bytes), duration_s, part->independent);
}

void HlsSegmenter::close_segment(int64_t end_dts) {
  seg_.open = false;
  if (limits_.low_latency) cut_part(end_dts);  // the segment is its parts
  BufferRef bytes = writer_->finish_segment(end_dts);
  if (!bytes) return;  // no sample in it: nothing worth a segment (a pending discontinuity stays)
  const double duration_s = static_cast<double>(std::max<int64_t>(0, end_dts - seg_.start)) / 1000.0;
  const bool disc = run_.discontinuity_next;
  const size_t size = bytes.size();
  auto seq = store_.add_segment(key_, std::move(bytes), duration_s, disc);
  if (limits_.aligned) note_traits(duration_s);
  if (seq && rewind_) rewind_->segment_closed(*seq, duration_s, disc, end_dts);
  if (tracks_) tracks_->refresh();
  run_.discontinuity_next = false;
  ++stats_.segments;
  if (disc) ++stats_.discontinuities;
  if (seq)
    stream_log().debug("hls: {} segment {} ({:.3f} s, {} bytes{})", key_text_, *seq, duration_s, size,
                       disc ? ", discontinuity" : "");
}

void HlsSegmenter::note_traits(double duration_s) {
  if (!run_.tracks) return;
  const protocol::TsStreams& t = *run_.tracks;
  HlsRenditionTraits traits = rendition_traits(t, video_.record, audio_.record, video_.width, video_.height);
  // FRAME-RATE (RFC 8216 §4.3.4.2): video frames over the segment's duration, to a 1/1000.
  if (t.has_video && duration_s > 0)
    traits.frame_rate = std::round(1000.0 * seg_.video_samples / duration_s) / 1000.0;
  store_.set_traits(key_, std::move(traits));
}

void HlsSegmenter::write(bool video, const SegmentSample& s) {
  // LL-HLS: a part ends before the first sample that would take it (nearly) past the part
  // target, on a sample boundary (RFC 8216bis §4.4.4.9: a part is at most PART-TARGET long).
  if (limits_.low_latency && writer_->part_pending() &&
      s.dts_ms - seg_.part_start >= limits_.part_ms - kPartSlackMs) {
    cut_part(s.dts_ms);
  }
  if (!writer_->part_pending()) seg_.part_start = s.dts_ms;
  if (!video) return writer_->write_audio(s);
  ++seg_.video_samples;
  if (writer_->write_video(s) == WriteResult::Dropped) run_.wait_keyframe = true;  // resume at a keyframe
}

}  // namespace rill::media
