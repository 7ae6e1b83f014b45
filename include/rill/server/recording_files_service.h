#pragma once
// The recording files of a worker's apps, off its event loop: the worker's BlockingWorkThread
// (made only when an app records), the catalog the API lists and deletes through
// (api/api_recordings.h), and, on worker 0 only, retention.
//
// Retention (apps.NAME.record.retention, record/retention_policy.h) runs 2 s after the worker
// starts and then every minute, on the work thread; one log line per file deleted. Worker 0, and
// not every worker, so that one process deletes (worker 0 exists in every generation and is
// respawned when it dies); not the master, which has no event loop and whose one thread must stay
// free for signals and respawns. During a reload the old and new worker 0 may both run it for a
// while: a file already gone is skipped.
#include <memory>

#include "rill/api/api_recordings.h"
#include "rill/core/timer_queue.h"
#include "rill/server/recording_file_route.h"
#include "rill/server/recording_mp4_route.h"
#include "rill/server/recording_playlist_route.h"

namespace rill::net {
struct WorkerCore;
class BlockingWorkThread;
}  // namespace rill::net

namespace rill::media {
class HlsStore;
}

namespace rill::server {

class RecordingFilesService {
 public:
  // Mounts the API's recording routes on `api` (which outlives this service). `changes`: this
  // worker's writer's opens and closes, which the catalog's index of ids follows.
  RecordingFilesService(net::WorkerCore& ctx, api::ApiServer& api, bool runs_retention,
                        std::shared_ptr<const record::RecordingChanges> changes);
  ~RecordingFilesService();
  RecordingFilesService(const RecordingFilesService&) = delete;
  RecordingFilesService& operator=(const RecordingFilesService&) = delete;

  // Mounts /recordings/... (server/recording_file_route.h) on the stream server `http` and
  // recording.m3u8 (server/recording_playlist_route.h) and recording.mp4
  // (server/recording_mp4_route.h) on its stream routes when an app records with record.serve;
  // `http`, `routes` and `gate` outlive this service.
  void serve_files(http::HttpServer& http, StreamRoutes& routes, StreamGate& gate);
  // hls.rewind: `hls` reads its history's segments back from the recordings on the work thread
  // (server/recorded_segment_reader.h) until this service goes; `hls` outlives it.
  void serve_rewind(media::HlsStore& hls);

 private:
  void schedule_retention(std::chrono::milliseconds after);
  void run_retention();

  net::WorkerCore& ctx_;
  std::unique_ptr<net::BlockingWorkThread> work_;
  media::HlsStore* hls_ = nullptr;  // reads through work_ (serve_rewind)
  api::RecordingStore store_;
  std::unique_ptr<RecordingFileRoute> files_;
  std::unique_ptr<RecordingPlaylistRoute> playlists_;
  std::unique_ptr<RecordingMp4Route> mp4s_;
  TimerId timer_ = 0;
  bool retention_ = false;
};

}  // namespace rill::server
