#include "rill/server/recording_mp4_route.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <string>

#include "rill/api/api_recordings.h"
#include "rill/core/access_line.h"
#include "rill/net/blocking_work_thread.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/http_byte_range.h"
#include "rill/protocol/query_string.h"
#include "rill/record/recording_files.h"
#include "rill/server/http_admission.h"

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

// What the work thread found: a cut, or a status and why.
struct Planned {
  std::shared_ptr<RecordingMp4Cut> cut;
  int status = 200;
  std::string why;
};

// The stream's recordings that may hold the window, indexed with their samples, and the cut.
Planned plan_cut(record::RecordingCatalog& catalog, const record::RecordingCatalog::App& app,
                 const media::StreamKey& key, protocol::ProgressiveMp4Window w, double seconds) {
  std::string error;
  std::vector<protocol::ProgressiveMp4File> files;
  auto cut = std::make_shared<RecordingMp4Cut>();
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
    files.push_back({static_cast<uint32_t>(cut->files.size()), e.start, ix.tracks(), ix.take_fragments()});
    cut->files.push_back(std::move(fd));
  }
  std::optional<protocol::ProgressiveMp4> m = protocol::cut_progressive_mp4(files, w);
  if (!m) {
    std::string why = "no fMP4 recording of " + key.str() + " covers that time";
    if (flv && files.empty())
      why += " (its recordings there are FLV: cutting an mp4 needs record.format fmp4)";
    return Planned{nullptr, 404, why};
  }
  cut->mp4 = std::move(*m);
  uint64_t at = cut->mp4.head.size();
  for (const protocol::Mp4ByteRun& r : cut->mp4.runs) {
    cut->run_at.push_back(at);
    at += r.length;
  }
  return Planned{std::move(cut), 200, {}};
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

RecordingMp4Route::~RecordingMp4Route() {
  if (sweep_) parts_.ctx.timers->cancel(sweep_);
}

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
        return [this, held, key, p = std::move(p)] {
          HttpExchange* ex = held.get();
          if (!ex) return;
          if (!p.cut) return ex->reply_error(p.status, p.why);
          send(*ex, key, p.cut);
        };
      });
  if (!queued) ex.reply_error(503, "too many recording requests waiting; try again");
}

void RecordingMp4Route::send(HttpExchange& ex, const media::StreamKey& key,
                             std::shared_ptr<const RecordingMp4Cut> cut) {
  const uint64_t size = cut->mp4.size;
  const std::string_view* range_header = ex.header("Range");
  const protocol::ByteRangeRequest range =
      protocol::parse_byte_range(range_header ? *range_header : std::string_view(), size);
  if (range.kind == protocol::ByteRangeRequest::Kind::Unsatisfiable) {
    ex.add_header("Content-Range", protocol::content_range(range, size));
    return ex.reply_error(416, "range not satisfiable");  // with the CORS headers
  }
  ex.add_cors_headers();
  const bool partial = range.kind == protocol::ByteRangeRequest::Kind::Partial;
  const uint64_t first = partial ? range.first : 0, length = partial ? range.length() : size;
  ex.add_header("Content-Type", "video/mp4");
  ex.add_header("Content-Disposition", "attachment; filename=\"" + file_name(key, cut->mp4.start) + "\"");
  ex.add_header("Accept-Ranges", "bytes");
  ex.add_header("Cache-Control", "no-cache");
  if (partial) ex.add_header("Content-Range", protocol::content_range(range, size));
  const HttpRequestInfo& info = ex.info();
  RecordingMp4Download::Access access{info.peer,
                                      key.app,
                                      key.name,
                                      core::redact_query(info.query, parts_.ctx.config->log.redact_params),
                                      ex.header("User-Agent") ? std::string(*ex.header("User-Agent")) : "",
                                      info.started_ms};
  http::HttpStreamHandover taken = ex.take_stream(partial ? 206 : 200, length);
  if (!taken) {  // HEAD: answered with the head alone
    if (taken.release_slot) taken.release_slot();
    return;
  }
  auto d = std::make_unique<RecordingMp4Download>(parts_.ctx, parts_.work, std::move(taken), std::move(cut),
                                                  first, length, std::move(access),
                                                  [this](RecordingMp4Download* done) { retire(done); });
  RecordingMp4Download* raw = d.get();
  downloads_.emplace(raw, std::move(d));
  raw->start();
}

void RecordingMp4Route::retire(RecordingMp4Download* d) {
  const auto it = downloads_.find(d);
  if (it == downloads_.end()) return;
  retired_.push_back(std::move(it->second));
  downloads_.erase(it);
  if (sweep_) return;
  sweep_ = parts_.ctx.timers->schedule(std::chrono::milliseconds(0), [this] {
    sweep_ = 0;
    retired_.clear();
  });
}

}  // namespace rill::server
