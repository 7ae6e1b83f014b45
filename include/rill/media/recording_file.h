#pragma once
// RecordingFile: the container half of a recording, as SegmentWriter is for HLS segments — the
// Recorder (recorder.h) keeps the plan (which frames, when files start and end, when data is
// flushed) and one RecordingFile per file turns frames into that file's bytes:
//   FLV  (protocol::FlvFileWriter): header, onMetaData with reserved room, then one tag per frame;
//        at close the onMetaData is rewritten in place (duration, filesize, keyframe index);
//   fMP4 (protocol::Fmp4Muxer): ftyp + moov from the sequence headers, then one moof + mdat per
//        cut (ISO/IEC 14496-12 §8.8): every prefix of the file that ends at a fragment is playable.
//
// Calls: begin() once, then header() and add() in publish order with file timestamps
// (milliseconds from the file's first frame), cut() whenever the recorder flushes, and at close a
// last cut() and final_rewrite(). media/: no file, no clock: bytes only.
#include <spdlog/logger.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rill/config/config.h"
#include "rill/core/stream_log.h"
#include "rill/media/media_frame.h"
#include "rill/record/file_writer.h"

namespace rill::media {

// What a file starts with: the sequence headers it is made for and the publisher's onMetaData.
struct RecordingHeaders {
  FramePtr video;            // AVC / HEVC (fMP4) or any (FLV) video sequence header; null: no video track
  FramePtr audio;            // AAC AudioSpecificConfig (fMP4) or any audio header; null: none
  FramePtr metadata;         // onMetaData; null: none
  bool video_track = false;  // the file has a video track (FLV video without a header: VP6, ...)
  bool audio_track = false;
};

class RecordingFile {
 public:
  virtual ~RecordingFile() = default;
  // The file's first bytes into `out`. False, with `why`, when the format takes none of the tracks.
  virtual bool begin(const RecordingHeaders& h, std::vector<uint8_t>& out, std::string& why) = 0;
  // A sequence header met in the middle of the file. False when this file cannot carry it (fMP4:
  // a new configuration needs a new moov, so a new file).
  virtual bool header(const MediaFrame& f, uint32_t ts, std::vector<uint8_t>& out) = 0;
  // A coded frame; false when the file skipped it (a codec it does not carry, a malformed sample).
  virtual bool add(const MediaFrame& f, uint32_t ts, std::vector<uint8_t>& out) = 0;
  // What add() holds becomes bytes of `out` (fMP4: one fragment, its last samples ending at
  // `end_ts`, the time of the frame that follows: the moof and the mdat's header in out.head, the
  // samples borrowed from their frames, whose payloads out.keep holds). FLV holds nothing. Bytes
  // borrowed come after the head: `out` goes to the writer before anything more is added to it.
  virtual void cut(uint32_t end_ts, record::AppendBytes& out) = 0;
  virtual size_t held_bytes() const = 0;  // what add() holds until the next cut()
  // The bytes handed to the file so far were taken by the disk (commit) or refused (rollback):
  // the close-time rewrite must describe only what the file holds.
  virtual void commit() {}
  virtual void rollback() {}
  // What to write where at close (FLV: the onMetaData at offset 13), after the last cut().
  virtual std::optional<std::pair<uint64_t, std::vector<uint8_t>>> final_rewrite() const {
    return std::nullopt;
  }
  virtual uint32_t duration_ms() const = 0;  // of what was added
};

std::unique_ptr<RecordingFile> make_recording_file(config::RecordFormat format, core::StreamLog log,
                                                   std::string label, size_t keyframe_capacity);

}  // namespace rill::media
