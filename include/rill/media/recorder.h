#pragma once
// Recorder: the stream output that writes a stream to files (apps.NAME.record, docs/recording.md).
// It keeps the plan and hands bytes on; the container is a RecordingFile (FLV or fMP4), the disk
// is the worker's record::FileWriter thread, so nothing here waits on a file.
//
//   start   a file starts at a video keyframe (the sequence headers first) with the audio that
//           came since the last video frame (an encoder's first audio frame often precedes its
//           first keyframe by a few ms), or at the first audio frame of a stream without video
//           (after kAudioOnlyProbeMs of audio with no video header, as the HLS segmenter does;
//           the audio held meanwhile goes into the file);
//   flush   what came since the last flush is handed to the writer once `flush` of stream time,
//           less the writer's round (record::FileWriterOptions::round, at most half), has passed
//           (fMP4: one moof + mdat, cut before a video frame when there is video);
//   rotate  at the first keyframe (audio frame, without video) after `segment`, or past
//           `max_size`, or after a new codec configuration (fMP4): the old file ends with the frame
//           before it, the new one starts with the sequence headers and that keyframe — each frame
//           is in exactly one file;
//   fail    a write error or a full writer queue ends the file (FLV: its onMetaData still
//           describes what it holds), logs one line naming the stream, the path and the reason,
//           and the recorder waits; it tries a new file at a keyframe after a back-off in stream
//           time (1 s doubling to 30 s), and is Recording again (with a log line) only once the
//           writer has written to that file.
//
// mode video / audio records one track; the other is skipped. mode manual records both, between
// a control(true) (the API's start: a file at the next start point) and a control(false) (stop:
// the file ends); it starts stopped. control() works in every mode: after a stop, `all` records
// nothing more until a start or the next publish (a new Recorder). media/: no file, no clock.
#include <spdlog/logger.h>

#include <cstdint>
#include <ctime>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rill/config/config.h"
#include "rill/core/stream_log.h"
#include "rill/media/recording_file.h"
#include "rill/media/rewind_link.h"
#include "rill/media/stream_key.h"
#include "rill/media/stream_output.h"
#include "rill/record/file_writer.h"

namespace rill::media {

class Recorder final : public StreamOutput {
 public:
  enum class State : uint8_t { Waiting, Recording, Failed, Stopped };
  static constexpr int64_t kAudioOnlyProbeMs = 1000;
  static constexpr size_t kMaxHeldAudio = 256;       // audio frames held while waiting for video
  static constexpr int32_t kHeldAudioSpanMs = 1000;  // held audio this much older than the start goes in
  static constexpr size_t kChunkBytes = 4u << 20;    // handed on before `flush` when this much waits
  static constexpr int64_t kFirstRetryMs = 1000, kMaxRetryMs = 30000;

  Recorder(record::FileWriter& writer, StreamKey key, const config::RecordConfig& cfg, spdlog::logger& log);
  ~Recorder() override;  // stop()
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  std::string_view name() const override { return "record"; }
  void on_frame(const FramePtr& f) override;
  void on_stop(const PublishSession&) override { stop("unpublished"); }
  // Closes the open file (its last fragment, the FLV rewrite), the note saying `reason`; nothing
  // more is recorded. Idempotent.
  void stop(const char* reason = "shutdown");
  // The API's start (true) or stop (false) of the recording; returns the state after it.
  State control(bool start);

  // What the API shows of the recording: the state, and the open file (path "" when none).
  struct Status {
    State state;
    std::string reason;  // why it failed
    std::string path;
    uint64_t bytes = 0;       // in the file so far
    std::time_t started = 0;  // wall clock of its open
  };
  Status status() const;

  // hls.rewind (media/rewind_link.h, src/media/recorder_rewind.cpp): an fMP4 fragment also ends
  // where each live segment ends, timestamps follow the segment timeline, files rotate only at a
  // segment boundary, and each live segment recorded whole goes back to the link once written.
  void follow_segments(std::shared_ptr<RewindLink> link);

  State state() const { return state_; }
  const std::string& failure() const { return failure_; }  // why it failed ("" unless Failed)
  uint64_t files_started() const { return files_; }
  uint64_t frames_written() const { return frames_written_; }
  uint64_t frames_skipped() const { return frames_skipped_; }  // the container did not take them

 private:
  void tick(uint32_t ts);
  void on_header(const FramePtr& f, bool video);
  void write_frame(const MediaFrame& f, bool video);
  void start_when_due(const FramePtr& f, bool video);
  bool rotation_due(const MediaFrame& f, bool video) const;
  void open_file(const FramePtr& first, bool with_video);
  uint32_t file_ts(uint32_t ts) const;
  bool hand_off();  // buf_ to the writer; false: refused (the queue is full)
  void check_file();
  void close_file(uint32_t end_ts, bool finish, const char* reason);
  void note_close(const std::string& reason);  // the file's RecordCloseNote, before its close
  void fail(const std::string& reason, bool disk_ok);
  std::string queue_full() const;
  // hls.rewind
  void on_segment_cut(const RewindLink::Cut& c);
  void hand_back_written();
  struct RecordedRun {
    RewindLink::Cut cut;
    record::RecordFilePtr file;
    uint64_t offset = 0, length = 0;
  };

  record::FileWriter& writer_;
  const StreamKey key_;
  const std::string label_;  // "record live/cam"
  const config::RecordConfig& cfg_;
  spdlog::logger& log_;
  core::StreamLog stream_log() const { return {log_, key_.str()}; }  // log_, about this stream
  FramePtr video_header_, audio_header_, metadata_;
  std::deque<FramePtr> held_audio_;  // waiting for the first video keyframe (or the probe's end)
  // Stream time: milliseconds of the publisher's timeline since the first frame (never backwards).
  bool clock_started_ = false;
  uint32_t last_ts_ = 0;
  int64_t now_ = 0;
  // The open file.
  record::RecordFilePtr file_;
  std::unique_ptr<RecordingFile> rf_;
  record::AppendBytes buf_;  // bytes not yet handed to the writer
  bool file_video_ = false, file_audio_ = false;
  bool rotate_pending_ =
      false;           // a configuration the open file cannot carry: a new one at the next start point
  uint32_t base_ = 0;  // stream timestamp of the file's first frame
  int64_t file_start_ = 0, last_flush_ = 0;
  std::time_t file_started_unix_ = 0;
  uint64_t handed_ = 0;  // bytes the writer took for this file
  // State.
  State state_ = State::Waiting;
  std::string failure_;
  bool stopped_ = false;
  bool paused_ = false;    // stopped by control(false) (or manual mode not started): no file is opened
  bool resuming_ = false;  // a file opened after a failure, not yet known to be written
  int64_t retry_at_ = 0, retry_ms_ = kFirstRetryMs;
  uint64_t files_ = 0, frames_written_ = 0, frames_skipped_ = 0;
  // hls.rewind
  std::shared_ptr<RewindLink> rewind_;
  bool at_boundary_ = false;                // a segment ended before the next coded frame
  bool boundary_now_ = false;               // this coded frame starts a live segment
  uint32_t first_ts_ = 0;                   // the open file's first timestamp (0 without rewind)
  std::optional<uint64_t> segment_offset_;  // where the live segment being recorded starts in the file
  std::vector<uint8_t> moov_;               // the open file's ftyp + moov
  std::deque<RecordedRun> recorded_;        // waiting for the writer
  static constexpr size_t kMaxRecordedRuns = 256;
};

}  // namespace rill::media
