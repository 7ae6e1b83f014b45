#include "rill/api/api_recordings.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "rill/api/api_server.h"
#include "rill/api/api_views.h"
#include "rill/net/blocking_work_thread.h"

namespace rill::api {

namespace {

using nlohmann::json;
using Query = std::map<std::string, std::string>;

constexpr std::string_view kRecordingsPath = "/api/v1/recordings";
constexpr std::string_view kRecordingsPrefix = "/api/v1/recordings/";

std::string format_name(protocol::RecordingFormat f) {
  return f == protocol::RecordingFormat::Flv    ? "flv"
         : f == protocol::RecordingFormat::Fmp4 ? "fmp4"
                                                : "unknown";
}

struct Filter {
  std::string app, name;
  std::optional<double> from, to;
  bool keeps(const record::RecordingEntry& e) const {
    if (!name.empty() && e.name != name) return false;
    if (from && e.start + e.duration < *from) return false;  // ended before
    if (to && e.start > *to) return false;                   // started after
    return true;
  }
};

void get_recordings(ApiServer& api, RecordingStore& store, HttpExchange& ex) {
  auto q = parse_api_query(ex.info().query);
  if (!q) return api.reply_error(ex, 400, "malformed query string");
  std::string error;
  const Paging paging = parse_paging(*q, error);
  if (!error.empty()) return api.reply_error(ex, 400, error);
  Filter f;
  f.app = (*q)["app"];
  f.name = (*q)["name"];
  for (const char* key : {"from", "to"}) {
    const std::string& v = (*q)[key];
    if (v.empty()) continue;
    const std::optional<double> t = parse_rfc3339(v);
    if (!t)
      return api.reply_error(ex, 400,
                             std::string(key) + " must be an RFC 3339 date-time, e.g. 2026-12-05T10:00:00Z");
    (std::string_view(key) == "from" ? f.from : f.to) = t;
  }
  if (!store.work) return api.reply_json(ex, 200, page(json::array(), paging));
  HttpHeld held = ex.hold();
  auto catalog = store.catalog;
  auto apps = store.apps;
  const bool queued =
      store.work->submit([&api, held, catalog, apps, f, paging]() -> net::BlockingWorkThread::Continuation {
        json items = json::array();
        for (const auto& app : apps) {
          if (!f.app.empty() && app.root.app != f.app) continue;
          std::string error;
          for (const record::RecordingEntry& e : catalog->list(app, error)) {
            if (f.keeps(e)) items.push_back(recording_json(e));
          }
        }
        return [&api, held, items = std::move(items), paging] {
          if (HttpExchange* e = held.get()) api.reply_json(*e, 200, page(items, paging));
        };
      });
  if (!queued) api.reply_error(ex, 503, "too many recording requests waiting; try again");
}

void delete_recording(ApiServer& api, RecordingStore& store, HttpExchange& ex) {
  const std::string id = ex.info().path.substr(kRecordingsPrefix.size());
  // An id is 16 hex digits: anything else is unknown, whatever it holds.
  if (id.size() != 16 || id.find_first_not_of("0123456789abcdef") != std::string::npos || !store.work)
    return api.reply_error(ex, 404, "no recording " + id);
  HttpHeld held = ex.hold();
  auto catalog = store.catalog;
  auto apps = store.apps;
  const bool queued =
      store.work->submit([&api, held, catalog, apps, id]() -> net::BlockingWorkThread::Continuation {
        const std::optional<record::RecordingEntry> e = catalog->find(apps, id);
        int status = 204;
        std::string why, path;
        if (!e) {
          status = 404;
          why = "no recording " + id;
        } else {
          path = e->path;
          switch (record::remove_recording(e->path, why)) {
            case record::RemoveResult::Removed:
              catalog->invalidate();
              break;
            case record::RemoveResult::BeingWritten:
              status = 409;
              why = "recording " + id + " is being written";
              break;
            case record::RemoveResult::Gone:
              status = 404;
              why = "no recording " + id;
              break;
            case record::RemoveResult::Failed:
              status = 500;
              why = "cannot remove recording " + id + ": " + why;
              break;
          }
        }
        return [&api, held, status, why, path] {
          if (status == 204) api.context().log->info("api: removed recording {}", path);
          HttpExchange* ex = held.get();
          if (!ex) return;
          if (status == 204) return api.reply_no_content(*ex);
          api.reply_error(*ex, status, why);
        };
      });
  if (!queued) api.reply_error(ex, 503, "too many recording requests waiting; try again");
}

}  // namespace

std::optional<double> parse_rfc3339(std::string_view text) {
  // date-time = full-date "T" partial-time time-offset (RFC 3339 §5.6); "t" and "z" too.
  const std::string s(text);
  int y, mo, d, h, mi, sec, used = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%*1[Tt]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6 ||
      used != 19)
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  size_t at = 19;
  double frac = 0;
  if (at < s.size() && s[at] == '.') {
    double scale = 0.1;
    ++at;
    const size_t digits = at;
    for (; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at, scale /= 10) frac += (s[at] - '0') * scale;
    if (at == digits) return std::nullopt;
  }
  int offset = 0;
  if (at < s.size() && (s[at] == 'Z' || s[at] == 'z')) {
    ++at;
  } else if (at + 6 == s.size() && (s[at] == '+' || s[at] == '-') && s[at + 3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(s.c_str() + at + 1, "%2d:%2d", &oh, &om) != 2 || oh > 23 || om > 59) return std::nullopt;
    offset = (s[at] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
    at += 6;
  } else {
    return std::nullopt;
  }
  if (at != s.size()) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return static_cast<double>(timegm(&tm) - offset) + frac;
}

json recording_json(const record::RecordingEntry& e) {
  return json{{"id", e.id},
              {"app", e.app},
              {"name", e.name},
              {"path", e.path},
              {"start", iso8601(static_cast<int64_t>(std::llround(e.start * 1000)))},
              {"duration", e.duration},
              {"bytes", e.bytes},
              {"format", format_name(e.format)},
              {"state", e.recording ? "recording" : "complete"}};
}

void mount_recording_routes(ApiServer& api, RecordingStore& store) {
  api.add(HttpMethod::Get, std::string(kRecordingsPath), PathMatch::Exact,
          [&api, &store](HttpExchange& ex) { get_recordings(api, store, ex); });
  api.add(HttpMethod::Delete, std::string(kRecordingsPrefix), PathMatch::Prefix,
          [&api, &store](HttpExchange& ex) { delete_recording(api, store, ex); });
}

}  // namespace rill::api
