#include "rill/server/recording_mp4_route.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>

#include "rill/api/api_recordings.h"
#include "rill/net/blocking_work_thread.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/http_conditional.h"
#include "rill/protocol/progressive_mp4.h"
#include "rill/protocol/query_string.h"
#include "rill/record/recording_catalog.h"
#include "rill/record/recording_files.h"
#include "rill/server/http_admission.h"
#include "rill/server/recording_download.h"

namespace rill::server {

namespace {

constexpr double kMax = RecordingMp4Route::kMaxSeconds;

// start, duration, end of the query into a window; "" or why not.
std::string parse_window(std::string_view query, protocol::ProgressiveMp4Window& w, double& seconds) {
  const protocol::QueryParams q = protocol::parse_query(query);
  auto time = [&](const char* name, std::optional<double>& out) -> std::string {
    const std::string* v = protocol::query_value(q, name);
    if (!v || v->empty()) return {};
    out = api::parse_rfc3339(*v);
    if (!out) return std::string(name) + " must be an RFC 3339 date-time, e.g. 2026-12-05T10:00:00Z";
    return {};
  };
  std::optional<double> end;
  if (std::string e = time("start", w.from); !e.empty()) return e;
  if (std::string e = time("end", end); !e.empty()) return e;
  seconds = kMax;
  const std::string* d = protocol::query_value(q, "duration");
  const std::string limit = "more than 0 and at most " + std::to_string(static_cast<int>(kMax));
  if (d && !d->empty()) {
    if (end) return "give duration or end, not both";
    double v = 0;
    const auto [p, ec] = std::from_chars(d->data(), d->data() + d->size(), v);
    if (ec != std::errc() || p != d->data() + d->size() || !std::isfinite(v) || v <= 0 || v > kMax)
      return "duration must be seconds, " + limit + ", e.g. duration=60";
    seconds = v;
  } else if (end) {
    if (!w.from) return "end needs a start";
    if (*end <= *w.from || *end - *w.from > kMax) return "end must be after start, by " + limit + " seconds";
    seconds = *end - *w.from;
  }
  if (w.from) w.to = *w.from + seconds;
  return {};
}

// What the work thread found: the cut's bytes and validators, or a status and why.
struct Planned {
  std::shared_ptr<FileRangeSource> source;
  double start = 0;  // the cut's, Unix seconds
  DownloadHead head;
  int status = 200;
  std::string why;
};

// The cut's ETag and Last-Modified, from what decides its bytes: the files its runs read (their
// ids, sizes and mtimes: a file that grew or was rewritten changes it), and the cut's start,
// duration and size, hashed as the recordings' ids are (FNV-1a 64, record/recording_catalog.h).
void validate_cut(const media::StreamKey& key, const protocol::ProgressiveMp4& mp4,
                  const std::vector<std::string>& ids, Planned& p) {
  std::string identity;
  int64_t newest = 0;
  std::vector<bool> used(ids.size(), false);
  for (const protocol::Mp4ByteRun& r : mp4.runs) used[r.file] = true;
  for (size_t i = 0; i < ids.size(); ++i) {
    struct stat st {};
    if (!used[i] || ::fstat(p.source->files[i].get(), &st) != 0) continue;
    char file[96];
    std::snprintf(file, sizeof file, "%s:%lld:%lld.%09ld;", ids[i].c_str(),
                  static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtim.tv_sec),
                  st.st_mtim.tv_nsec);
    identity += file;
    newest = std::max<int64_t>(newest, st.st_mtim.tv_sec);
  }
  char cut[96];
  std::snprintf(cut, sizeof cut, "%.6f/%.6f/%llu", mp4.start, mp4.duration,
                static_cast<unsigned long long>(mp4.size));
  identity += cut;
  p.head.etag.append(1, '"').append(record::recording_id(key.str(), identity)).append(1, '"');
  p.head.last_modified = protocol::http_date(newest);
}

// The stream's recordings that may hold the window, indexed with their samples, and the cut.
Planned plan_cut(record::RecordingCatalog& catalog, const record::RecordingCatalog::App& app,
                 const media::StreamKey& key, protocol::ProgressiveMp4Window w, double seconds) {
  std::string error;
  std::vector<protocol::ProgressiveMp4File> files;
  std::vector<std::string> ids;
  auto source = std::make_shared<FileRangeSource>();
  bool flv = false;
  for (const record::RecordingEntry& e : catalog.list(app, error)) {
    if (e.name != key.name) continue;
    if (w.from && e.start + e.duration < *w.from) continue;
    if (w.to && e.start > *w.to) continue;
    if (e.format == protocol::RecordingFormat::Flv) flv = true;
    if (e.format != protocol::RecordingFormat::Fmp4) continue;
    net::UniqueFd fd(::open(e.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) continue;
    protocol::RecordingIndexLimits lim;
    lim.keep_samples = true;
    protocol::RecordingIndex ix(lim);
    // A file being written, or damaged: what was indexed before its end or the damage counts.
    record::read_recording_index(fd.get(), e.bytes, ix, false);
    if (ix.format() != protocol::RecordingFormat::Fmp4 || ix.fragments().empty()) continue;
    if (!w.from) {  // no start: the first recorded, and the window from there
      w.from = e.start;
      w.to = e.start + seconds;
    }
    files.push_back({static_cast<uint32_t>(source->files.size()), e.start, ix.tracks(), ix.take_fragments()});
    source->files.push_back(std::move(fd));
    ids.push_back(e.id);
  }
  std::optional<protocol::ProgressiveMp4> m = protocol::cut_progressive_mp4(files, w);
  if (!m) {
    std::string why = "no fMP4 recording of " + key.str() + " covers that time";
    if (flv && files.empty())
      why += " (its recordings there are FLV: cutting an mp4 needs record.format fmp4)";
    return Planned{nullptr, 0, {}, 404, why};
  }
  Planned p{source, m->start, {}, 200, {}};
  validate_cut(key, *m, ids, p);
  source->head = std::move(m->head);
  for (const protocol::Mp4ByteRun& r : m->runs) source->runs.push_back({r.file, r.offset, r.length});
  source->index();
  return p;
}

// "NAME-20261205T101500Z.mp4"
std::string file_name(const media::StreamKey& key, double start) {
  const std::time_t t = static_cast<std::time_t>(std::floor(start));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  return key.name + "-" + stamp + ".mp4";
}

}  // namespace

void RecordingMp4Route::install(StreamRoutes& routes) {
  routes.set(StreamRoute::RecordingMp4, [this](HttpExchange& ex, const StreamPath& route) {
    admit_http_play(parts_.ctx, parts_.gate, ex, GateProto::Hls, route.key,
                    [this](HttpExchange& e, GateDecision d) { serve(e, d.key, d.app); });
  });
}

void RecordingMp4Route::serve(HttpExchange& ex, const media::StreamKey& key, const config::AppConfig* app) {
  const auto rec = std::find_if(parts_.apps.begin(), parts_.apps.end(),
                                [&](const auto& a) { return a.root.app == key.app; });
  if (!app || !app->record.serve || rec == parts_.apps.end())
    return ex.reply_error(404, "no recordings of " + key.str());
  protocol::ProgressiveMp4Window window;
  double seconds = kMax;
  if (const std::string why = parse_window(ex.info().query, window, seconds); !why.empty())
    return ex.reply_error(400, why);
  HttpHeld held = ex.hold();
  const bool queued =
      parts_.work.submit([this, held, key, window, seconds, rec_app = *rec,
                          catalog = parts_.catalog]() -> net::BlockingWorkThread::Continuation {
        Planned p = plan_cut(*catalog, rec_app, key, window, seconds);
        return [this, held, key, p = std::move(p)]() mutable {
          HttpExchange* ex = held.get();
          if (!ex) return;
          if (!p.source) return ex->reply_error(p.status, p.why);
          p.head.content_type = "video/mp4";
          p.head.disposition = "attachment; filename=\"" + file_name(key, p.start) + "\"";
          p.head.cache_control = "no-cache";
          answer_download(parts_.ctx, parts_.work, *ex, key, std::move(p.source), p.head);
        };
      });
  if (!queued) ex.reply_error(503, "too many recording requests waiting; try again");
}

}  // namespace rill::server
