#include "rill/media/hls_segmenter.h"

#include <algorithm>

#include "rill/media/hls_store.h"
#include "rill/protocol/aac.h"
#include "rill/protocol/avc.h"
#include "rill/protocol/error.h"
#include "rill/protocol/flv_tag.h"
#include "rill/protocol/fmp4_muxer.h"
#include "rill/protocol/hevc.h"

namespace rill::media {

namespace {

using protocol::TsMuxer;
using protocol::TsSample;

constexpr size_t kPsiBytes = 2 * TsMuxer::kPacketSize;             // PAT + PMT at every segment start
constexpr size_t kPesHeaderMax = 19;                               // PES header with PTS and DTS (2.4.3.6)
constexpr size_t kFirstPayloadMin = TsMuxer::kPacketSize - 4 - 8;  // TS header + AF with PCR
constexpr int64_t kMaxStepMs = 1000;

bool same_bytes(std::span<const uint8_t> a, const std::vector<uint8_t>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// Whole TS packets for a PES of `pes` bytes, at most (every packet carries >= 176 payload bytes).
size_t ts_bytes_for(size_t pes) {
  return (pes + kFirstPayloadMin - 1) / kFirstPayloadMin * TsMuxer::kPacketSize;
}

}  // namespace

HlsSegmenter::HlsSegmenter(HlsStore& store, StreamKey key, const config::HlsConfig& cfg, spdlog::logger& log)
    : store_(store),
      key_(std::move(key)),
      key_text_(key_.str()),
      log_(log),
      fragment_ms_(std::max<int64_t>(1, cfg.fragment.count())),
      max_fragment_ms_(cfg.max_fragment.count() > 0
                           ? std::max<int64_t>(cfg.max_fragment.count(), fragment_ms_)
                           : 3 * fragment_ms_),
      max_segment_size_(std::max<size_t>(cfg.max_segment_size, 4 * TsMuxer::kPacketSize)),
      fmp4_(cfg.container == config::HlsContainer::Fmp4 || cfg.low_latency),
      low_latency_(cfg.low_latency),
      part_ms_(std::max<int64_t>(1, cfg.part.count())) {
  store_.open(key_, cfg);
}

HlsSegmenter::~HlsSegmenter() { finish(); }

void HlsSegmenter::finish() {
  if (finished_) return;
  finished_ = true;
  if (seg_open_) close_segment(max_dts_ + frame_step());
  store_.close(key_);
  log_.info(
      "hls: {} segmenter done: {} segments ({} discontinuities, {} forced cuts, {} timestamp jumps), "
      "{} samples written, {} skipped, {} malformed, {} too big",
      key_text_, stats_.segments, stats_.discontinuities, stats_.forced_cuts, stats_.timestamp_jumps,
      stats_.samples_written, stats_.samples_skipped, stats_.samples_dropped, stats_.samples_too_big);
}

void HlsSegmenter::on_frame(const MediaFrame& f) {
  if (finished_) return;
  if (f.type == MediaType::Video)
    on_video(f);
  else if (f.type == MediaType::Audio)
    on_audio(f);
  // Script data (metadata) has no place in the TS.
}

// ---------------------------------------------------------------------------------------------
// input

void HlsSegmenter::on_video(const MediaFrame& f) {
  const std::span<const uint8_t> body = f.payload.span();
  protocol::VideoTagInfo vi;
  try {
    vi = protocol::parse_video_tag(body);
  } catch (const protocol::ProtocolError&) {
    ++stats_.samples_dropped;
    return;
  }
  if (vi.is_command_frame || vi.is_multitrack) return;
  const bool hevc = vi.codec == protocol::FlvVideoCodec::HEVC;
  if (vi.codec != protocol::FlvVideoCodec::H264 && !hevc) {
    if ((vi.is_coded_frame || vi.is_sequence_header) && skip_codec(warned_video_)) {
      log_.warn(
          "hls: {}: {} video is not supported in HLS segments here; segmenting without video", key_text_,
          vi.fourcc ? protocol::fourcc_to_string(vi.fourcc) : std::string(protocol::to_string(vi.codec)));
    }
    return;
  }
  const std::span<const uint8_t> data = body.subspan(std::min(vi.payload_offset, body.size()));
  if (vi.is_sequence_header) {
    on_video_config(data, hevc);
    return;
  }
  if (!vi.is_coded_frame) return;  // end of sequence
  if (avc_ok_ && hevc != hevc_) {  // coded frames of another codec than the configuration's
    ++stats_.samples_skipped;
    return;
  }
  video_seen_ = true;
  const int64_t dts = map_time(f.timestamp);
  note_step(true, dts);
  if (!avc_ok_) {
    ++stats_.samples_skipped;
    return;
  }
  const size_t bound = bound_video(data.size());
  if (bound + kPsiBytes > max_segment_size_) {
    ++stats_.samples_too_big;
    wait_keyframe_ = true;  // what follows refers to the lost frame
    if (!warned_drop_) {
      warned_drop_ = true;
      log_.warn("hls: {}: dropped a {} byte video frame larger than max_segment_size {}", key_text_,
                data.size(), max_segment_size_);
    }
    return;
  }
  if (!place(dts, true, vi.is_keyframe, bound)) {
    ++stats_.samples_skipped;
    return;
  }
  TsSample s;
  s.kind = TsSample::Kind::Video;
  s.dts_ms = dts;
  s.cts_ms = vi.composition_time_ms;
  s.keyframe = vi.is_keyframe;
  s.data = data;
  write(s);
}

void HlsSegmenter::on_video_config(std::span<const uint8_t> record, bool hevc) {
  video_seen_ = true;
  if (avc_ok_ && hevc == hevc_ && same_bytes(record, avc_record_)) return;  // repeated, nothing changed
  avc_record_.assign(record.begin(), record.end());
  hevc_ = hevc;
  auto ps_bytes = [](const auto&... lists) {
    size_t n = 0;
    (..., [&] {
      for (const auto& p : lists) n += 4 + p.size();
    }());
    return n;
  };
  try {
    if (hevc) {
      const protocol::HevcConfig c = protocol::parse_hevc_config(record);
      avc_length_size_ = c.nalu_length_size;
      avc_ps_bytes_ = ps_bytes(c.vps, c.sps, c.pps);
    } else {
      const protocol::AvcConfig c = protocol::parse_avc_config(record);
      avc_length_size_ = c.nalu_length_size;
      avc_ps_bytes_ = ps_bytes(c.sps, c.pps);
    }
    avc_ok_ = true;
  } catch (const protocol::ProtocolError& e) {
    avc_ok_ = false;
    log_.warn("hls: {}: unusable {} sequence header ({}); video skipped until a valid one", key_text_,
              hevc ? "HEVC" : "AVC", e.what());
  }
  config_changed(true);
}

void HlsSegmenter::on_audio(const MediaFrame& f) {
  const std::span<const uint8_t> body = f.payload.span();
  protocol::AudioTagInfo ai;
  try {
    ai = protocol::parse_audio_tag(body);
  } catch (const protocol::ProtocolError&) {
    ++stats_.samples_dropped;
    return;
  }
  const std::span<const uint8_t> data = body.subspan(std::min(ai.payload_offset, body.size()));
  if (!follow_audio_codec(ai, data)) return;

  const int64_t dts = map_time(f.timestamp);
  note_step(false, dts);
  if (!mp3_ && !aac_ok_) {
    ++stats_.samples_skipped;
    return;
  }
  if (mp3_ && fmp4_) {
    if (skip_codec(warned_audio_))
      log_.warn("hls: {}: MP3 audio is not carried in fMP4 segments; segmenting without audio", key_text_);
    return;
  }
  if (!have_first_audio_) {
    have_first_audio_ = true;
    first_audio_dts_ = dts;
  }
  const size_t bound = bound_audio(data.size());
  if (bound + kPsiBytes > max_segment_size_) {
    ++stats_.samples_too_big;
    return;
  }
  if (!place(dts, false, false, bound)) {
    ++stats_.samples_skipped;
    return;
  }
  if (mux_) return hold_audio(dts, data);
  TsSample s;
  s.kind = TsSample::Kind::Audio;
  s.dts_ms = dts;
  s.data = data;
  write(s);
}

void HlsSegmenter::hold_audio(int64_t dts, std::span<const uint8_t> data) {
  // A frame ADTS cannot carry is dropped alone here rather than failing its whole group.
  if (mux_->streams().audio == protocol::AudioCodec::AAC && data.size() > protocol::kAdtsMaxPayload) {
    ++stats_.samples_dropped;
    const std::string why =
        "AAC access unit of " + std::to_string(data.size()) + " bytes exceeds the ADTS limit";
    if (stats_.samples_dropped == 1)
      log_.warn("hls: {}: dropped a malformed sample: {}", key_text_, why);
    else
      log_.debug("hls: {}: dropped a malformed sample: {}", key_text_, why);
    return;
  }
  if (!audio_held_.empty() &&
      (dts - audio_held_.front().dts >= kAudioPesMs || audio_bytes_.size() + data.size() > kAudioPesBytes)) {
    flush_audio();
  }
  audio_held_.push_back(HeldAudio{dts, audio_bytes_.size(), data.size()});
  audio_bytes_.insert(audio_bytes_.end(), data.begin(), data.end());
}

void HlsSegmenter::flush_audio() {
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
    mux_->write_audio(audio_group_, ts_seg_);
  } catch (const protocol::ProtocolError& e) {
    stats_.samples_dropped += frames;
    if (stats_.samples_dropped == frames)
      log_.warn("hls: {}: dropped malformed audio: {}", key_text_, e.what());
    else
      log_.debug("hls: {}: dropped malformed audio: {}", key_text_, e.what());
    return;
  }
  const uint64_t written = mux_->stats().samples_written() - before;
  seg_samples_ += written;
  stats_.samples_written += written;
  stats_.samples_skipped += frames - written;
}

bool HlsSegmenter::follow_audio_codec(const protocol::AudioTagInfo& ai, std::span<const uint8_t> data) {
  switch (ai.codec) {
    case protocol::FlvAudioCodec::AAC:
      if (ai.is_sequence_header) {
        on_aac_config(data);
        return false;
      }
      if (!ai.is_coded_frame) return false;
      if (mp3_) {  // AAC frames after MP3 without a new AudioSpecificConfig: nothing to frame them with
        mp3_ = false;
        aac_ok_ = false;
        config_changed(false);
      }
      return true;
    case protocol::FlvAudioCodec::MP3:
      if (!ai.is_coded_frame) return false;
      if (!mp3_) {
        mp3_ = true;
        config_changed(false);
      }
      return true;
    default:
      if ((ai.is_coded_frame || ai.is_sequence_header) && skip_codec(warned_audio_)) {
        log_.warn(
            "hls: {}: audio format {}{} is not supported in MPEG-TS segments here; segmenting without audio",
            key_text_, ai.sound_format, ai.fourcc ? " (" + protocol::fourcc_to_string(ai.fourcc) + ")" : "");
      }
      return false;
  }
}

void HlsSegmenter::on_aac_config(std::span<const uint8_t> asc) {
  if (aac_ok_ && !mp3_ && same_bytes(asc, aac_asc_)) return;  // repeated, nothing changed
  aac_asc_.assign(asc.begin(), asc.end());
  try {
    protocol::check_adts_compatible(protocol::parse_aac_config(asc));
    aac_ok_ = true;
  } catch (const protocol::ProtocolError& e) {
    aac_ok_ = false;
    log_.warn("hls: {}: unusable AAC sequence header ({}); audio skipped until a valid one", key_text_,
              e.what());
  }
  mp3_ = false;
  config_changed(false);
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
  if (program_ && program_->has_video && have_video_dts_) return video_step_;
  return have_audio_dts_ ? audio_step_ : video_step_;
}

void HlsSegmenter::note_step(bool video, int64_t dts) {
  bool& have = video ? have_video_dts_ : have_audio_dts_;
  int64_t& last = video ? last_video_dts_ : last_audio_dts_;
  int64_t& step = video ? video_step_ : audio_step_;
  if (have && dts > last && dts - last <= kMaxStepMs) step = dts - last;
  have = true;
  last = dts;
}

int64_t HlsSegmenter::map_time(uint32_t ts) {
  if (!have_time_) {
    have_time_ = true;
    last_in_ = ts;
    max_dts_ = ts;  // the stream's timeline continues across a republish, so does ours
    return max_dts_;
  }
  // 32-bit modular difference to the newest frame: a wrap of the FLV timestamp is no jump.
  const int64_t d = static_cast<int32_t>(ts - last_in_);
  if (d > kMaxForwardJumpMs || d < -kMaxBackwardJumpMs) {
    // The publisher's clock jumped. End the segment where the media ended and continue the
    // timeline right after it; the next segment is marked discontinuous (RFC 8216 §4.3.2.3:
    // "a change in ... timestamp sequence").
    ++stats_.timestamp_jumps;
    const int64_t resume = max_dts_ + frame_step();
    log_.info("hls: {}: timestamp jump of {} ms (at {}), discontinuity", key_text_, d, ts);
    if (seg_open_) close_segment(resume);
    if (produced_any_) discontinuity_next_ = true;
    last_in_ = ts;
    max_dts_ = resume;
    have_video_dts_ = have_audio_dts_ = false;
    return max_dts_;
  }
  if (d > 0) {
    last_in_ = ts;
    max_dts_ += d;
    return max_dts_;
  }
  return max_dts_ + d;  // a little behind the newest (audio/video interleaving)
}

// ---------------------------------------------------------------------------------------------
// cutting

protocol::TsStreams HlsSegmenter::desired() const {
  protocol::TsStreams s;
  s.has_video = avc_ok_;
  s.has_audio = fmp4_ ? aac_ok_ && !mp3_ : mp3_ || aac_ok_;
  s.audio = mp3_ ? protocol::AudioCodec::MP3 : protocol::AudioCodec::AAC;
  s.video = hevc_ ? protocol::VideoCodec::HEVC : protocol::VideoCodec::H264;
  return s;
}

void HlsSegmenter::config_changed(bool video) {
  if (!program_) return;  // the first muxer is made with whatever is current
  (video ? video_stale_ : audio_stale_) = true;
  restart_pending_ = true;
}

bool HlsSegmenter::can_start(bool video, bool keyframe, int64_t dts) const {
  const protocol::TsStreams d = desired();
  if (d.has_video) return video && keyframe;
  if (!d.has_audio || video) return false;
  // Audio only: unless this segmenter is already running audio only, give a video track a
  // moment to show up (an encoder may send its audio header first).
  return produced_any_ || (have_first_audio_ && dts - first_audio_dts_ >= kAudioOnlyProbeMs);
}

bool HlsSegmenter::place(int64_t dts, bool video, bool keyframe, size_t bound) {
  const bool start_point = can_start(video, keyframe, dts);
  if (!seg_open_) {
    if (!start_point) return false;
    start_segment(dts);
  } else if (restart_pending_ && start_point) {
    close_segment(dts);
    start_segment(dts);
  } else {
    const int64_t age = dts - seg_start_;
    bool cut = false, forced = false;
    if (start_point && age >= fragment_ms_) {
      cut = true;
    } else if (age >= max_fragment_ms_) {
      cut = forced = true;  // no keyframe in time
    } else if (seg_samples_ > 0 && building_bytes() + bound > max_segment_size_) {
      cut = forced = true;  // the segment would outgrow its cap
    }
    if (cut) {
      if (forced) ++stats_.forced_cuts;
      close_segment(dts);
      start_segment(dts);
    }
  }
  if (video) {
    if (keyframe) wait_keyframe_ = false;
    if (video_stale_ || wait_keyframe_) return false;
  } else if (audio_stale_) {
    return false;
  }
  return true;
}

void HlsSegmenter::start_segment(int64_t dts) {
  const protocol::TsStreams d = desired();
  if (!program_ || restart_pending_ || *program_ != d) {
    // A new program (tracks or codec configuration changed): new continuity counters and
    // maybe a new PMT (or a new fMP4 init section), so the segment is a discontinuity.
    if (program_) discontinuity_next_ = true;
    program_ = d;
    if (fmp4_)
      new_fmp4_muxer(d);
    else
      new_ts_muxer(d);
    restart_pending_ = video_stale_ = audio_stale_ = false;
    wait_keyframe_ = d.has_video;  // video resumes at a keyframe
  }
  seg_.clear();
  if (mux_) {
    // Room for a segment like the last one (capped: a segment never outgrows max_segment_size).
    ts_seg_.start(std::min(last_ts_size_ + last_ts_size_ / 8, max_segment_size_));
    mux_->begin_segment(ts_seg_);  // PAT and PMT first (RFC 8216 §3.2)
  }
  seg_start_ = dts;
  seg_samples_ = 0;
  seg_open_ = true;
  produced_any_ = true;
}

void HlsSegmenter::new_ts_muxer(const protocol::TsStreams& d) {
  fmux_.reset();
  mux_ = std::make_unique<TsMuxer>(d);
  try {
    if (d.has_video && hevc_)
      mux_->set_hevc_config(avc_record_);
    else if (d.has_video)
      mux_->set_avc_config(avc_record_);
    if (d.has_audio && d.audio == protocol::AudioCodec::AAC) mux_->set_aac_config(aac_asc_);
  } catch (const protocol::ProtocolError& e) {  // validated on arrival; kept for safety
    log_.warn("hls: {}: codec configuration rejected by the TS muxer: {}", key_text_, e.what());
  }
}

void HlsSegmenter::new_fmp4_muxer(const protocol::TsStreams& d) {
  mux_.reset();
  fmux_.reset();
  protocol::Fmp4Tracks t;
  t.has_video = d.has_video;
  if (d.has_video) t.video_record = avc_record_;
  t.video_codec = hevc_ ? protocol::Fmp4VideoCodec::Hevc : protocol::Fmp4VideoCodec::Avc;
  t.has_audio = d.has_audio;
  if (d.has_audio) t.audio_asc = aac_asc_;
  try {
    fmux_ = std::make_unique<protocol::Fmp4Muxer>(std::move(t));
  } catch (const protocol::ProtocolError& e) {
    log_.warn("hls: {}: codec configuration rejected by the fMP4 muxer: {}", key_text_, e.what());
    return;
  }
  // The init section (EXT-X-MAP, RFC 8216 §4.3.2.5) of the segments that follow.
  store_.set_init(key_, SharedBuffer::copy_of(std::span<const uint8_t>(fmux_->init_segment())));
}

void HlsSegmenter::flush_part(int64_t end_dts) {
  if (!fmux_ || fmux_->empty()) return;
  const bool independent = fmux_->independent();  // INDEPENDENT=YES (§4.4.4.9)
  const size_t from = seg_.size();
  fmux_->flush(std::max(end_dts, part_start_), seg_);
  const double duration_s = static_cast<double>(std::max<int64_t>(0, end_dts - part_start_)) / 1000.0;
  store_.add_part(key_, SharedBuffer::copy_of(std::span<const uint8_t>(seg_).subspan(from)), duration_s,
                  independent);
}

size_t HlsSegmenter::building_bytes() const {
  if (fmux_)
    return seg_.size() + protocol::Fmp4Muxer::fragment_overhead(seg_samples_) + fmux_->pending_bytes();
  if (!mux_) return seg_.size();
  // Held audio: one PES for the group (PES header once, an ADTS header per frame).
  const size_t held = audio_held_.empty()
                          ? 0
                          : ts_bytes_for(kPesHeaderMax + audio_held_.size() * protocol::kAdtsHeaderSize +
                                         audio_bytes_.size());
  return ts_seg_.size() + held;
}

void HlsSegmenter::close_segment(int64_t end_dts) {
  flush_audio();  // the segment's last audio group
  seg_open_ = false;
  if (fmux_ && low_latency_)
    flush_part(end_dts);  // the segment is its parts
  else if (fmux_)
    fmux_->flush(end_dts, seg_);  // one moof + mdat per segment
  if (seg_samples_ == 0) {        // PSI only: nothing worth a segment (a pending discontinuity stays)
    seg_.clear();
    ts_seg_.clear();
    return;
  }
  const double duration_s = static_cast<double>(std::max<int64_t>(0, end_dts - seg_start_)) / 1000.0;
  const bool disc = discontinuity_next_;
  // MPEG-TS: the bytes were written where they are served from; fMP4: copied out of the builder.
  BufferRef bytes = fmux_ ? SharedBuffer::copy_of(std::span<const uint8_t>(seg_)) : ts_seg_.finish();
  const size_t size = bytes.size();
  if (!fmux_) last_ts_size_ = size;
  auto seq = store_.add_segment(key_, std::move(bytes), duration_s, disc);
  discontinuity_next_ = false;
  ++stats_.segments;
  if (disc) ++stats_.discontinuities;
  if (seq)
    log_.debug("hls: {} segment {} ({:.3f} s, {} bytes{})", key_text_, *seq, duration_s, size,
               disc ? ", discontinuity" : "");
  // Keep the capacity for the next segment of about this size; give back what an unusually big
  // one left behind.
  seg_.clear();
  if (seg_.capacity() > 2 * size + (1u << 20)) {
    std::vector<uint8_t> fresh;
    fresh.reserve(size);
    seg_.swap(fresh);
  }
}

void HlsSegmenter::write(const TsSample& s) {
  if (fmux_ || fmp4_) {
    protocol::Fmp4Sample m{s.kind == TsSample::Kind::Video, s.dts_ms, s.cts_ms, s.keyframe, s.data};
    // LL-HLS: a part ends before the first sample that would take it (nearly) past the part
    // target, on a sample boundary (RFC 8216bis §4.4.4.9: a part is at most PART-TARGET long).
    if (low_latency_ && fmux_ && !fmux_->empty() && s.dts_ms - part_start_ >= part_ms_ - kPartSlackMs) {
      flush_part(s.dts_ms);
    }
    if (fmux_ && fmux_->empty()) part_start_ = s.dts_ms;
    if (!fmux_ || !fmux_->add(m)) {
      ++stats_.samples_skipped;
      return;
    }
    ++seg_samples_;
    ++stats_.samples_written;
    return;
  }
  const uint64_t before = mux_->stats().samples_written();
  try {
    mux_->write(s, ts_seg_);
  } catch (const protocol::ProtocolError& e) {
    ++stats_.samples_dropped;
    if (s.kind == TsSample::Kind::Video) wait_keyframe_ = true;
    if (stats_.samples_dropped == 1)
      log_.warn("hls: {}: dropped a malformed sample: {}", key_text_, e.what());
    else
      log_.debug("hls: {}: dropped a malformed sample: {}", key_text_, e.what());
    return;
  }
  if (mux_->stats().samples_written() == before) {
    ++stats_.samples_skipped;
    return;
  }
  ++seg_samples_;
  ++stats_.samples_written;
}

// Upper bounds of the TS bytes one sample becomes (to cut before the segment cap, never after).
size_t HlsSegmenter::bound_video(size_t n) const {
  // Annex B start codes replace the length fields; with 1- or 2-byte length fields a NAL unit
  // may grow up to 2.5x (1 + 1 bytes -> 4 + 1). AUD (6) and SPS/PPS are added before an IDR.
  const size_t payload = avc_length_size_ >= 4 ? n : n / 2 * 5 + 5;
  return ts_bytes_for(kPesHeaderMax + 7 + avc_ps_bytes_ + payload);
}

size_t HlsSegmenter::bound_audio(size_t n) {
  return ts_bytes_for(kPesHeaderMax + protocol::kAdtsHeaderSize + n);
}

}  // namespace rill::media
