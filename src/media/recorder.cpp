#include "rill/media/recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "rill/config/record_config.h"

namespace rill::media {

namespace {

// Index entries an FLV file reserves room for: two keyframes a second of `segment` and some
// margin, 4096 (about 2 h 15 at one keyframe every 2 s before the index thins) for a file per publish.
size_t keyframe_capacity(const config::RecordConfig& cfg) {
  if (cfg.segment.count() == 0) return 4096;
  return std::clamp<size_t>(static_cast<size_t>(cfg.segment.count() / 500) + 32, 64, 4096);
}

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

Recorder::Recorder(record::FileWriter& writer, StreamKey key, const config::RecordConfig& cfg,
                   spdlog::logger& log)
    : writer_(writer),
      key_(std::move(key)),
      label_("record " + key_.app + "/" + key_.name),
      cfg_(cfg),
      log_(log) {
  if (cfg_.mode == config::RecordMode::Manual) {
    paused_ = true;
    state_ = State::Stopped;
  }
}

Recorder::~Recorder() {
  if (rewind_) rewind_->on_cut(nullptr);
  stop("shutdown");
}

void Recorder::stop(const char* reason) {
  if (stopped_) return;
  stopped_ = true;
  if (file_) {
    check_file();
    if (file_) close_file(rf_->duration_ms(), true, reason);
  }
  held_audio_.clear();
}

Recorder::State Recorder::control(bool start) {
  if (stopped_ || start != paused_) return state_;  // already so
  if (start) {
    paused_ = false;
    state_ = State::Waiting;
    failure_.clear();
    retry_ms_ = kFirstRetryMs;
    stream_log().info("{}: recording started by the API: a file opens at the next keyframe", label_);
    return state_;
  }
  if (file_) {
    check_file();
    if (file_) close_file(rf_->duration_ms(), true, "stopped");
  }
  paused_ = true;
  resuming_ = false;
  held_audio_.clear();
  state_ = State::Stopped;
  failure_.clear();
  stream_log().info("{}: recording stopped by the API", label_);
  return state_;
}

Recorder::Status Recorder::status() const {
  Status st{state_, failure_, {}, 0, 0};
  if (file_) {
    st.path = file_->path();
    st.bytes = file_->written();
    st.started = file_started_unix_;
  }
  return st;
}

void Recorder::note_close(const std::string& reason) {
  record::RecordCloseNote note;
  note.app = key_.app;
  note.name = key_.name;
  note.started = file_started_unix_;
  note.duration_ms = rf_ ? rf_->duration_ms() - first_ts_ : 0;
  note.reason = reason;
  file_->set_note(std::move(note));
}

void Recorder::tick(uint32_t ts) {
  if (clock_started_) now_ += static_cast<uint32_t>(ts - last_ts_);  // never backwards (Stream's timeline)
  clock_started_ = true;
  last_ts_ = ts;
}

void Recorder::on_frame(const FramePtr& fp) {
  if (stopped_ || !fp) return;
  const MediaFrame& f = *fp;
  tick(f.timestamp);
  if (f.metadata) {
    metadata_ = fp;
    return;
  }
  if (f.type == MediaType::Data) return;
  const bool video = f.type == MediaType::Video;
  if ((cfg_.mode == config::RecordMode::Video && !video) || (cfg_.mode == config::RecordMode::Audio && video))
    return;
  if (f.sequence_header) return on_header(fp, video);
  if (!f.coded) return;
  boundary_now_ = std::exchange(at_boundary_, false);
  if (rewind_) hand_back_written();
  if (file_) check_file();
  if (!file_) {
    if (!paused_) start_when_due(fp, video);
    return;
  }
  if (rotation_due(f, video)) {
    close_file(file_ts(f.timestamp), true, "rotated");
    if (state_ != State::Failed) open_file(fp, video);
    return;
  }
  write_frame(f, video);
}

void Recorder::on_header(const FramePtr& fp, bool video) {
  (video ? video_header_ : audio_header_) = fp;
  if (!file_ || (video ? !file_video_ : !file_audio_)) return;
  if (!rf_->header(*fp, file_ts(fp->timestamp), buf_.head)) rotate_pending_ = true;
}

bool Recorder::rotation_due(const MediaFrame& f, bool video) const {
  if (rewind_ && !boundary_now_) return false;  // a live segment stays in one file
  // A start point of the open file: a video keyframe, or any audio frame in an audio-only file.
  const bool start_point = file_video_ ? (video && f.keyframe) : !video;
  // A video track appeared after an audio-only start: the next video keyframe starts a file with it.
  if (!file_video_ && video && f.keyframe && video_header_) return true;
  if (!start_point) return false;
  if (rotate_pending_) return true;
  if (cfg_.segment.count() > 0 && now_ - file_start_ >= cfg_.segment.count()) return true;
  return cfg_.max_size > 0 && handed_ + buf_.size() + rf_->held_bytes() >= cfg_.max_size;
}

void Recorder::start_when_due(const FramePtr& fp, bool video) {
  const MediaFrame& f = *fp;
  if (state_ == State::Failed) {
    // Retry after the back-off, and only once the writer has room again.
    if (now_ < retry_at_ || writer_.queued_bytes() > writer_.max_queue_bytes() / 2) return;
  }
  const bool want_video = cfg_.mode != config::RecordMode::Audio && video_header_ != nullptr;
  if (video) {
    if (want_video && f.keyframe) return open_file(fp, true);
    // Video before its header or between keyframes: nothing to start with; the audio held so
    // far belongs to the frames skipped.
    if (want_video) held_audio_.clear();
    return;
  }
  const bool probe_done =
      !held_audio_.empty() &&
      static_cast<uint32_t>(f.timestamp - held_audio_.front()->timestamp) >= kAudioOnlyProbeMs;
  const bool audio_only = cfg_.mode == config::RecordMode::Audio || (!want_video && probe_done);
  if (audio_only && audio_header_) return open_file(fp, false);
  held_audio_.push_back(fp);
  if (held_audio_.size() > kMaxHeldAudio) held_audio_.pop_front();
}

void Recorder::open_file(const FramePtr& first, bool with_video) {
  RecordingHeaders h;
  h.video_track = with_video;
  h.audio_track = cfg_.mode != config::RecordMode::Video && audio_header_ != nullptr;
  if (h.video_track) h.video = video_header_;
  if (h.audio_track) h.audio = audio_header_;
  h.metadata = metadata_;
  // The first frames: the audio held while waiting (it came after the last video frame skipped,
  // so it belongs with this keyframe; at most kHeldAudioSpanMs older than it; all of it for an
  // audio-only file) and `first`, in timestamp order. An encoder's first audio often comes a few ms before
  // its first keyframe.
  std::vector<FramePtr> start;
  for (const FramePtr& a : held_audio_) {
    if (!with_video || static_cast<int32_t>(a->timestamp - first->timestamp) >= -kHeldAudioSpanMs)
      start.push_back(a);
  }
  held_audio_.clear();
  start.push_back(first);
  const uint32_t ref = first->timestamp;
  std::stable_sort(start.begin(), start.end(), [ref](const FramePtr& a, const FramePtr& b) {
    return static_cast<int32_t>(a->timestamp - ref) < static_cast<int32_t>(b->timestamp - ref);
  });
  const uint32_t base = start.front()->timestamp;
  rf_ = make_recording_file(cfg_.format, stream_log(), label_, keyframe_capacity(cfg_));
  buf_.clear();
  std::string why;
  segment_offset_.reset();
  if (!rf_->begin(h, buf_.head, why)) {
    rf_.reset();
    buf_.clear();
    if (failure_ != why) stream_log().warn("{}: not recording: {}", label_, why);
    state_ = State::Failed;
    failure_ = why;
    retry_at_ = now_ + kMaxRetryMs;
    return;
  }
  file_started_unix_ = writer_.now();
  const std::string path = config::expand_record_path(cfg_.path, key_.app, key_.name, file_started_unix_,
                                                      config::record_extension(cfg_.format));
  file_ = writer_.open(path);
  ++files_;
  file_video_ = h.video_track;
  file_audio_ = h.audio_track;
  rotate_pending_ = false;
  base_ = base;
  first_ts_ = file_ts(base);
  file_start_ = last_flush_ = now_;
  handed_ = 0;
  // After a failure the state stays Failed until the new file is known to be written.
  resuming_ = state_ == State::Failed;
  if (!resuming_) {
    state_ = State::Recording;
    stream_log().info("{}: recording to {}", label_, path);
  }
  if (rewind_) moov_ = buf_.head;
  // The header reaches the disk at once: the file exists (or fails) from its first frame.
  if (!hand_off()) return fail(queue_full(), true);
  // Opened at a segment boundary: the live segment that starts here is recorded whole.
  if (rewind_ && boundary_now_) segment_offset_ = handed_;
  for (const FramePtr& f : start) {
    if (file_) write_frame(*f, f->type == MediaType::Video);
  }
}

uint32_t Recorder::file_ts(uint32_t ts) const {
  if (rewind_) return rewind_->time_of(ts);  // the live segments' timeline (their tfdt)
  const uint32_t rel = ts - base_;
  return static_cast<int32_t>(rel) < 0 ? 0 : rel;  // a frame a little older than the file's first
}

void Recorder::write_frame(const MediaFrame& f, bool video) {
  if (video ? !file_video_ : !file_audio_) return;
  const uint32_t ts = file_ts(f.timestamp);
  // Flush points: fMP4 cuts before a video frame when the file has video, so video samples get
  // their exact durations; FLV anywhere.
  const bool cut_point = cfg_.format == config::RecordFormat::Flv || !file_video_ || video;
  // The writer carries chunks out in rounds (FileWriterOptions::round): handed over that much
  // before `flush` (at most half of it), a chunk still reaches the file within `flush`.
  const int64_t flush_due =
      cfg_.flush.count() - std::min<int64_t>(writer_.round().count(), cfg_.flush.count() / 2);
  if (cut_point && (now_ - last_flush_ >= flush_due || rf_->held_bytes() >= kChunkBytes)) {
    rf_->cut(ts, buf_);
    last_flush_ = now_;
    if (!hand_off())
      return fail(fmt::format("the write queue is full ({} waiting)", mib(writer_.queued_bytes())), true);
  }
  if (rf_->add(f, ts, buf_.head)) {
    ++frames_written_;
  } else {
    ++frames_skipped_;
  }
  if (buf_.size() >= kChunkBytes && !hand_off()) {
    fail(fmt::format("the write queue is full ({} waiting)", mib(writer_.queued_bytes())), true);
  }
}

bool Recorder::hand_off() {
  if (buf_.empty()) return true;
  // The staged bytes go to the writer as they are (moved, not copied; fMP4 samples borrowed from
  // their frames); the next ones are staged in a new buffer as large, which then grows without copies.
  record::AppendBytes bytes = std::move(buf_);
  buf_ = {};
  buf_.head.reserve(bytes.head.capacity());
  const size_t n = bytes.size();
  if (!writer_.append(file_, std::move(bytes))) {
    rf_->rollback();
    return false;
  }
  rf_->commit();
  handed_ += n;
  return true;
}

void Recorder::check_file() {
  if (const int err = file_->error()) {
    return fail(fmt::format("{}: {}: {}", file_->path(), file_->failed_call(), std::strerror(err)), false);
  }
  if (resuming_ && file_->written() > 0) {
    resuming_ = false;
    state_ = State::Recording;
    retry_ms_ = kFirstRetryMs;
    stream_log().info("{}: recording again, to {} (it had stopped: {})", label_, file_->path(), failure_);
    failure_.clear();
  }
}

void Recorder::close_file(uint32_t end_ts, bool finish, const char* reason) {
  bool refused = false;
  if (finish) {
    rf_->cut(end_ts, buf_);
    refused = !hand_off();
    if (auto rewrite = rf_->final_rewrite()) {
      writer_.write_at(file_, rewrite->first,
                       SharedBuffer::copy_of(std::span<const uint8_t>(rewrite->second)));
    }
  }
  note_close(reason);
  writer_.close(file_);
  if (finish && !refused) {
    stream_log().info("{}: closed {}: {:.1f} s, {}", label_, file_->path(),
                      (rf_->duration_ms() - first_ts_) / 1000.0, mib(handed_));
  }
  file_.reset();
  rf_.reset();
  buf_.clear();
  if (refused) fail(fmt::format("the write queue is full ({} waiting)", mib(writer_.queued_bytes())), true);
}

void Recorder::fail(const std::string& reason, bool disk_ok) {
  const bool again = resuming_ || state_ == State::Failed;
  if (file_) {
    // After a full queue the file holds whole tags or fragments: its FLV metadata is rewritten for
    // them. After a disk error nothing more is written to it.
    if (disk_ok) {
      if (auto rewrite = rf_->final_rewrite()) {
        writer_.write_at(file_, rewrite->first,
                         SharedBuffer::copy_of(std::span<const uint8_t>(rewrite->second)));
      }
    }
    note_close("failed: " + reason);
    writer_.close(file_);
    file_.reset();
    rf_.reset();
    buf_.clear();
  }
  if (!again) writer_.note_failure();
  if (again) {
    stream_log().debug("{}: still failing: {}", label_, reason);
  } else {
    stream_log().error("{}: recording stopped: {}; the stream goes on, a new file is tried at a keyframe",
                       label_, reason);
  }
  state_ = State::Failed;
  failure_ = reason;
  resuming_ = false;
  retry_at_ = now_ + retry_ms_;
  retry_ms_ = std::min(retry_ms_ * 2, kMaxRetryMs);
}

}  // namespace rill::media
