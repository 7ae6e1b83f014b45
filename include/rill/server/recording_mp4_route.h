#pragma once
// GET|HEAD /{app}/{name}/recording.mp4?start=RFC3339&duration=SECONDS (or &end=RFC3339): one
// progressive MP4 (moov first) cut at video keyframes from the stream's fMP4 recordings
// (protocol/progressive_mp4.h), for a download or a plain <video> element (docs/recording.md).
//
//   - Auth: the StreamGate as for the live HLS playlist, exactly as recording.m3u8 (token of the
//     stream in the query, access rules, on_play).
//   - start: optional (the first recorded); duration: seconds, more than 0 and at most
//     kMaxSeconds, or end (after start, at most kMaxSeconds after it); neither: kMaxSeconds from
//     start. A value that does not parse or is out of bounds: 400 saying which.
//   - The files are listed, indexed (keep_samples) and opened on the worker's BlockingWorkThread;
//     a file still being written counts with what its index holds now (its whole fragments), so
//     a cut that reaches into it may grow between two requests. No fMP4 file covers the time:
//     404 (saying so when only FLV recordings do: cutting needs record.format fmp4).
//   - Content-Length known before the first byte, Content-Type video/mp4, Content-Disposition
//     attachment; filename="NAME-YYYYMMDDTHHMMSSZ.mp4" (the cut's start, UTC). The answer is
//     server/recording_download.h's: a strong ETag of the cut (its files' ids, sizes and mtimes,
//     its start, duration and size: the plan is deterministic while the files it reads do not
//     change) and Last-Modified (the newest of those files), If-None-Match (304), one Range (206
//     with Content-Range, the slice of the same bytes; 416 when unsatisfiable) honoured when
//     If-Range matches (else 200, whole). The body streams (FileRangeBody) as a RecordingDownload
//     session; the connection closes after it.
#include "rill/server/recording_file_route.h"
#include "rill/server/stream_routes.h"

namespace rill::server {

class RecordingMp4Route {
 public:
  static constexpr double kMaxSeconds = 3600;

  explicit RecordingMp4Route(RecordingRouteParts parts) : parts_(std::move(parts)) {}
  RecordingMp4Route(const RecordingMp4Route&) = delete;
  RecordingMp4Route& operator=(const RecordingMp4Route&) = delete;

  void install(StreamRoutes& routes);

 private:
  void serve(HttpExchange& ex, const media::StreamKey& key, const config::AppConfig* app);

  RecordingRouteParts parts_;
};

}  // namespace rill::server
