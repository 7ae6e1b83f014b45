#include "rill/server/recording_playlist_route.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "rill/api/api_recordings.h"
#include "rill/net/blocking_work_thread.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/query_string.h"
#include "rill/protocol/recording_playlist.h"
#include "rill/protocol/stream_token.h"
#include "rill/record/recording_files.h"
#include "rill/server/http_admission.h"
#include "rill/server/recording_file_route.h"

namespace rill::server {

namespace {

// The file's fragments as the playlist takes them; nullopt when it cannot be read or is no
// fragmented MP4 with its init part at 0.
std::optional<protocol::RecordingPlaylistFile> playlist_file(const record::RecordingEntry& e,
                                                             const std::string& query) {
  const int fd = ::open(e.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  protocol::RecordingIndex ix;
  const std::string error = record::read_recording_index(fd, e.bytes, ix, false);
  ::close(fd);
  if (ix.format() != protocol::RecordingFormat::Fmp4 || ix.init_offset() != 0 || ix.init_size() == 0)
    return std::nullopt;
  std::string uri = std::string(RecordingFileRoute::kPrefix) + e.id + "/" +
                    protocol::percent_encode(e.path.substr(e.path.rfind('/') + 1));
  if (!query.empty()) uri += "?" + query;
  return protocol::RecordingPlaylistFile{std::move(uri), e.start, ix.init_size(), ix.fragments()};
}

}  // namespace

void RecordingPlaylistRoute::install(StreamRoutes& routes) {
  routes.set(StreamRoute::RecordingPlaylist, [this](HttpExchange& ex, const StreamPath& route) {
    admit_http_play(parts_.ctx, parts_.gate, ex, GateProto::Hls, route.key,
                    [this](HttpExchange& e, GateDecision d) { serve(e, d.key, d.app); });
  });
}

void RecordingPlaylistRoute::serve(HttpExchange& ex, const media::StreamKey& key,
                                   const config::AppConfig* app) {
  const auto rec = std::find_if(parts_.apps.begin(), parts_.apps.end(),
                                [&](const auto& a) { return a.root.app == key.app; });
  if (!app || !app->record.serve || rec == parts_.apps.end())
    return ex.reply_error(404, "no recordings of " + key.str());
  protocol::RecordingPlaylistOptions options;
  options.segment_seconds = std::chrono::duration<double>(app->hls.fragment).count();
  const protocol::QueryParams q = protocol::parse_query(ex.info().query);
  for (const char* name : {"start", "end"}) {
    const std::string* v = protocol::query_value(q, name);
    if (!v || v->empty()) continue;
    const std::optional<double> t = api::parse_rfc3339(*v);
    if (!t)
      return ex.reply_error(400,
                            std::string(name) + " must be an RFC 3339 date-time, e.g. 2026-12-05T10:00:00Z");
    (std::string_view(name) == "start" ? options.from : options.to) = t;
  }
  HttpHeld held = ex.hold();
  const bool queued = parts_.work.submit(
      [held, key, options, rec_app = *rec, catalog = parts_.catalog,
       token = protocol::token_part_of(ex.info().query)]() -> net::BlockingWorkThread::Continuation {
        std::string error;
        std::vector<protocol::RecordingPlaylistFile> files;
        for (const record::RecordingEntry& e : catalog->list(rec_app, error)) {
          if (e.name != key.name || e.format != protocol::RecordingFormat::Fmp4 || e.recording) continue;
          if (options.from && e.start + e.duration < *options.from) continue;
          if (options.to && e.start > *options.to) continue;
          if (auto f = playlist_file(e, token)) files.push_back(std::move(*f));
        }
        std::string text = protocol::recording_vod_playlist(files, options);
        return [held, key, text = std::move(text)] {
          HttpExchange* ex = held.get();
          if (!ex) return;
          if (text.empty()) return ex->reply_error(404, "no recordings of " + key.str() + " in that time");
          ex->add_header("Content-Type", "application/vnd.apple.mpegurl");
          ex->add_header("Cache-Control", "no-cache");
          ex->add_cors_headers();
          ex->reply(200, std::string_view(text));
        };
      });
  if (!queued) ex.reply_error(503, "too many recording requests waiting; try again");
}

}  // namespace rill::server
