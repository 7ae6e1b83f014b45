#include "rill/server/recording_files_service.h"

#include <spdlog/logger.h>

#include <chrono>
#include <ctime>

#include "rill/config/config.h"
#include "rill/core/event_timer_queue.h"
#include "rill/net/blocking_work_thread.h"
#include "rill/net/worker_core.h"
#include "rill/record/retention_policy.h"
#include "rill/server/recorded_segment_reader.h"

namespace rill::server {

namespace {
constexpr std::chrono::milliseconds kFirstRetention{2000};
constexpr std::chrono::milliseconds kRetentionPeriod{60000};
}  // namespace

RecordingFilesService::RecordingFilesService(net::WorkerCore& ctx, api::ApiServer& api, bool runs_retention,
                                             std::shared_ptr<const record::RecordingChanges> changes)
    : ctx_(ctx) {
  store_.apps = record::catalog_apps(*ctx.config);
  store_.catalog = std::make_shared<record::RecordingCatalog>();
  store_.catalog->follow(std::move(changes));
  if (!store_.apps.empty()) {
    work_ = std::make_unique<net::BlockingWorkThread>(ctx.base);
    store_.work = work_.get();
  }
  api::mount_recording_routes(api, store_);
  for (const auto& app : store_.apps) {
    const auto& r = ctx.config->apps.at(app.root.app).record.retention;
    retention_ = retention_ || r.max_age.count() > 0 || r.max_bytes > 0;
  }
  retention_ = retention_ && runs_retention && work_;
  if (retention_) schedule_retention(kFirstRetention);
}

void RecordingFilesService::serve_files(http::HttpServer& http, StreamRoutes& routes, StreamGate& gate) {
  bool serves = false;
  for (const auto& app : store_.apps) serves = serves || ctx_.config->apps.at(app.root.app).record.serve;
  if (!serves || !work_) return;
  const RecordingRouteParts parts{ctx_, gate, *work_, store_.catalog, store_.apps};
  files_ = std::make_unique<RecordingFileRoute>(parts);
  files_->mount(http);
  playlists_ = std::make_unique<RecordingPlaylistRoute>(parts);
  playlists_->install(routes);
  mp4s_ = std::make_unique<RecordingMp4Route>(parts);
  mp4s_->install(routes);
}

void RecordingFilesService::serve_rewind(media::HlsStore& hls) {
  bool rewinds = false;
  for (const auto& app : store_.apps)
    rewinds = rewinds || ctx_.config->apps.at(app.root.app).hls.rewind.count() > 0;
  if (!rewinds || !work_) return;
  hls_ = &hls;
  hls.set_recorded_reader(recorded_segment_reader(*work_));
}

// The thread goes first (its continuations capture this and the route), then the timer.
RecordingFilesService::~RecordingFilesService() {
  if (hls_) hls_->set_recorded_reader(nullptr);
  work_.reset();
  files_.reset();
  playlists_.reset();
  mp4s_.reset();
  if (timer_) ctx_.timers->cancel(timer_);
}

void RecordingFilesService::schedule_retention(std::chrono::milliseconds after) {
  timer_ = ctx_.timers->schedule(after, [this] {
    timer_ = 0;
    run_retention();
  });
}

void RecordingFilesService::run_retention() {
  struct Limits {
    record::RecordingCatalog::App app;
    record::RetentionLimits limits;
  };
  std::vector<Limits> apps;
  for (const auto& app : store_.apps) {
    const auto& r = ctx_.config->apps.at(app.root.app).record.retention;
    if (r.max_age.count() == 0 && r.max_bytes == 0) continue;
    apps.push_back(Limits{
        app,
        record::RetentionLimits{std::chrono::duration_cast<std::chrono::seconds>(r.max_age), r.max_bytes}});
  }
  auto catalog = store_.catalog;
  const bool queued = work_->submit([this, apps, catalog]() -> net::BlockingWorkThread::Continuation {
    std::vector<std::string> lines;
    const std::time_t now = std::time(nullptr);
    for (const Limits& a : apps) {
      std::string error;
      const std::vector<record::RecordingEntry> files = catalog->list(a.app, error);
      if (!error.empty()) lines.push_back("record " + a.app.root.app + ": retention: " + error);
      std::vector<record::RetentionCandidate> candidates;
      for (const auto& f : files)
        candidates.push_back({static_cast<std::time_t>(f.start), f.bytes, f.recording});
      for (size_t i : record::files_past_retention(candidates, a.limits, now)) {
        std::string why;
        const record::RemoveResult r = record::remove_recording(files[i].path, why);
        if (r == record::RemoveResult::Removed) {
          catalog->invalidate();
          lines.push_back("record " + a.app.root.app + ": retention deleted " + files[i].path + " (" +
                          std::to_string(files[i].bytes) + " bytes, started " +
                          std::to_string(static_cast<int64_t>(files[i].start)) + ")");
        } else if (r == record::RemoveResult::Failed) {
          lines.push_back("record " + a.app.root.app + ": retention cannot delete " + files[i].path + ": " +
                          why);
        }
      }
    }
    return [this, lines = std::move(lines)] {
      for (const std::string& l : lines) ctx_.log->info("{}", l);
      schedule_retention(kRetentionPeriod);
    };
  });
  if (!queued) schedule_retention(kRetentionPeriod);
}

}  // namespace rill::server
