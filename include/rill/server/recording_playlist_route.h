#pragma once
// GET|HEAD /{app}/{name}/recording.m3u8?start=RFC3339&end=RFC3339: the VOD playlist of the
// stream's fMP4 recordings that overlap [start, end] (both optional: the whole archive),
// protocol/recording_playlist.h, its segments byte ranges of the files under /recordings/...
// (server/recording_file_route.h). Asks the StreamGate as a live HLS playlist request; a token in
// the query goes on to every URI of the playlist. FLV recordings and files still being written
// are left out; 404 when nothing is left, or the app does not serve its recordings. The files
// are listed and indexed on the worker's BlockingWorkThread.
#include <memory>
#include <vector>

#include "rill/server/recording_file_route.h"
#include "rill/server/stream_routes.h"

namespace rill::server {

class RecordingPlaylistRoute {
 public:
  explicit RecordingPlaylistRoute(RecordingRouteParts parts) : parts_(std::move(parts)) {}
  RecordingPlaylistRoute(const RecordingPlaylistRoute&) = delete;
  RecordingPlaylistRoute& operator=(const RecordingPlaylistRoute&) = delete;

  void install(StreamRoutes& routes);

 private:
  void serve(HttpExchange& ex, const media::StreamKey& key, const config::AppConfig* app);

  RecordingRouteParts parts_;
};

}  // namespace rill::server
