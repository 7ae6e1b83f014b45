#include "rill/api/api_views.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>
#include <vector>

#include "rill/api/json_fields.h"
#include "rill/protocol/percent_coding.h"

namespace rill::api {

namespace {

using nlohmann::json;

constexpr size_t kMaxQueryParams = 32;

using json_fields::arr;
using json_fields::num;
using json_fields::str;
using json_fields::u64;

bool parse_size_param(const std::string& text, size_t& out) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = static_cast<size_t>(std::stoul(text));
  return true;
}

// Per stream key, the distinct HLS viewers seen by any worker.
std::map<std::string, std::set<std::string>> hls_viewers(const json& gathered) {
  std::map<std::string, std::set<std::string>> out;
  for (const json& w : arr(gathered, "workers")) {
    const auto it = w.find("hls_viewers");
    if (it == w.end() || !it->is_object()) continue;
    for (const auto& [key, list] : it->items()) {
      if (!list.is_array()) continue;
      for (const json& v : list) {
        if (v.is_string()) out[key].insert(v.get<std::string>());
      }
    }
  }
  return out;
}

struct Merged {
  const json* owner = nullptr;  // the owner's stream_details entry
  int owner_slot = -1;
  int owner_pid = 0;
  uint64_t rtmp = 0, flv = 0, bytes_out = 0, dropped = 0;
};

std::map<std::string, Merged> merge_streams(const json& gathered) {
  std::map<std::string, Merged> by_key;
  for (const json& w : arr(gathered, "workers")) {
    for (const json& d : arr(w, "stream_details")) {
      const std::string key = d.value("key", "");
      Merged& m = by_key[key];
      if (d.value("owner", false) && d.value("live", false)) {
        m.owner = &d;
        m.owner_slot = w.value("slot", 0);
        m.owner_pid = w.value("pid", 0);
      }
      const json players = d.value("players", json::object());
      m.rtmp += u64(players, "rtmp");
      m.flv += u64(players, "flv");
      m.bytes_out += u64(d, "bytes_out");
      m.dropped += u64(d, "dropped_frames");
    }
  }
  return by_key;
}

json publisher_json(const json& p, int64_t now_unix_ms, double& uptime_s) {
  if (!p.is_object()) return nullptr;
  const int64_t since = p.value("since_ms", int64_t{0});
  uptime_s = static_cast<double>(std::max<int64_t>(0, now_unix_ms - since)) / 1000.0;
  return {{"client_id", p.value("client_id", uint64_t{0})},
          {"proto", p.value("proto", "")},
          {"addr", p.value("addr", "")},
          {"since", iso8601(since)}};
}

json stream_item(const Merged& m, size_t hls_players, int64_t now_unix_ms) {
  const json& d = *m.owner;
  double uptime_s = 0;
  json publisher = publisher_json(d.value("publisher", json()), now_unix_ms, uptime_s);
  const json hls = d.value("hls", json::object());
  // The owner's totals over every worker, killed ones included (workers/stream_totals.h); without
  // them (no shared area) the sums of the workers that answered.
  const json totals = d.value("totals", json());
  const bool shared = totals.is_object();
  const uint64_t bytes_in = shared ? u64(totals, "bytes_in") : u64(d, "bytes_in");
  const uint64_t bytes_out = shared ? u64(totals, "bytes_out") : m.bytes_out;
  const uint64_t dropped = shared ? u64(totals, "dropped_frames") : m.dropped;
  const uint64_t segments = shared ? u64(totals, "hls_segments") : u64(hls, "segments_total");
  return {{"app", d.value("app", "")},
          {"name", d.value("name", "")},
          {"worker", m.owner_slot},
          {"worker_pid", m.owner_pid},
          {"uptime_s", std::round(uptime_s * 10) / 10},
          {"publisher", publisher},
          {"exec", d.value("exec", json::array())},
          {"video", d.value("video", json())},
          {"audio", d.value("audio", json())},
          {"bitrate_in_kbps", std::round(num(d, "bitrate_in_kbps"))},
          {"bytes_in", bytes_in},
          {"bytes_out", bytes_out},
          {"dropped_frames", dropped},
          {"players",
           {{"rtmp", m.rtmp}, {"flv", m.flv}, {"hls", hls_players}, {"total", m.rtmp + m.flv + hls_players}}},
          {"hls",
           {{"enabled", hls.value("enabled", false)},
            {"media_sequence", u64(hls, "media_sequence")},
            {"segments", u64(hls, "segments")},
            {"segments_total", segments}}},
          {"record", d.value("record", json{{"state", "off"}})},
          {"source", d.value("source", "publish")}};
}

}  // namespace

std::optional<std::map<std::string, std::string>> parse_api_query(std::string_view raw) {
  std::map<std::string, std::string> out;
  size_t count = 0;
  while (!raw.empty()) {
    const size_t amp = raw.find('&');
    std::string_view part = raw.substr(0, amp);
    raw = amp == std::string_view::npos ? std::string_view() : raw.substr(amp + 1);
    if (part.empty()) continue;
    if (++count > kMaxQueryParams) return std::nullopt;
    const size_t eq = part.find('=');
    std::string k(part.substr(0, eq)), v(eq == std::string_view::npos ? "" : part.substr(eq + 1));
    std::replace(k.begin(), k.end(), '+', ' ');
    std::replace(v.begin(), v.end(), '+', ' ');
    std::string dk, dv;
    if (!protocol::percent_decode(k, dk) || !protocol::percent_decode(v, dv)) return std::nullopt;
    out[dk] = dv;
  }
  return out;
}

Paging parse_paging(const std::map<std::string, std::string>& q, std::string& error) {
  Paging p;
  if (auto it = q.find("limit"); it != q.end()) {
    if (!parse_size_param(it->second, p.limit) || p.limit < 1 || p.limit > kMaxPageLimit) {
      error = "limit must be an integer from 1 to 1000, got '" + it->second.substr(0, 32) + "'";
      return p;
    }
  }
  if (auto it = q.find("offset"); it != q.end()) {
    if (!parse_size_param(it->second, p.offset)) {
      error = "offset must be an integer from 0 to 999999999, got '" + it->second.substr(0, 32) + "'";
    }
  }
  return p;
}

json page(const json& all, const Paging& p) {
  json items = json::array();
  for (size_t i = p.offset; i < all.size() && items.size() < p.limit; ++i) items.push_back(all[i]);
  return {{"total", all.size()}, {"limit", p.limit}, {"offset", p.offset}, {"items", std::move(items)}};
}

std::string iso8601(int64_t unix_ms) {
  const time_t secs = static_cast<time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(unix_ms % 1000));
  return out;
}

int newest_generation(const json& gathered) {
  int newest = 0;
  for (const json& w : arr(gathered, "workers")) newest = std::max(newest, w.value("generation", 0));
  return newest;
}

json stream_items(const json& gathered, int64_t now_unix_ms, const std::string& app) {
  const auto viewers = hls_viewers(gathered);
  json items = json::array();
  for (const auto& [key, m] : merge_streams(gathered)) {
    if (!m.owner) continue;  // no live publisher anywhere: not a stream (yet)
    if (!app.empty() && m.owner->value("app", "") != app) continue;
    const auto v = viewers.find(key);
    items.push_back(stream_item(m, v == viewers.end() ? 0 : v->second.size(), now_unix_ms));
  }
  return items;  // std::map: sorted by "app/name"
}

json client_items(const json& gathered, const std::string& app, const std::string& name,
                  const std::string& kind) {
  const auto keep = [&](const std::string& a, const std::string& n, const std::string& k) {
    return (app.empty() || a == app) && (name.empty() || n == name) && (kind.empty() || k == kind);
  };
  std::vector<json> items;
  const int newest = newest_generation(gathered);
  for (const json& w : arr(gathered, "workers")) {
    for (const json& c : arr(w, "clients")) {
      if (!keep(c.value("app", ""), c.value("name", ""), c.value("kind", ""))) continue;
      json item = c;
      item["since"] = iso8601(c.value("since_ms", int64_t{0}));
      item.erase("since_ms");
      item["worker"] = w.value("slot", 0);
      item["worker_pid"] = w.value("pid", 0);
      item["worker_retiring"] = w.value("generation", 0) < newest;
      items.push_back(std::move(item));
    }
  }
  std::sort(items.begin(), items.end(), [](const json& a, const json& b) {
    return a.value("id", uint64_t{0}) < b.value("id", uint64_t{0});
  });
  // HLS viewers: no connection, no id (they cannot be kicked); "addr user-agent" as seen.
  for (const auto& [key, viewers] : hls_viewers(gathered)) {
    const size_t slash = key.find('/');
    const std::string a = key.substr(0, slash), n = slash == std::string::npos ? "" : key.substr(slash + 1);
    if (!keep(a, n, "player")) continue;
    for (const std::string& v : viewers) {
      const size_t sp = v.find(' ');
      items.push_back({{"id", nullptr},
                       {"kind", "player"},
                       {"proto", "hls"},
                       {"addr", v.substr(0, sp)},
                       {"user_agent", sp == std::string::npos ? "" : v.substr(sp + 1)},
                       {"app", a},
                       {"name", n}});
    }
  }
  json out = json::array();
  for (auto& i : items) out.push_back(std::move(i));
  return out;
}

json server_view(const json& gathered, int64_t now_unix_ms) {
  json workers = json::array();
  const int newest = newest_generation(gathered);
  int64_t started = now_unix_ms;
  int master_pid = 0;
  std::string version;
  double in_kbps = 0, out_kbps = 0;
  for (const json& w : arr(gathered, "workers")) {
    const json process = w.value("process", json::object());
    size_t owned = 0;
    for (const json& d : arr(w, "stream_details"))
      owned += d.value("owner", false) && d.value("live", false) ? 1 : 0;
    workers.push_back({{"id", w.value("slot", 0)},
                       {"pid", w.value("pid", 0)},
                       {"generation", w.value("generation", 0)},
                       {"retiring", w.value("generation", 0) < newest},
                       {"sessions", u64(w, "sessions")},
                       {"streams", owned},
                       {"cpu_pct", std::round(num(process, "cpu_pct") * 10) / 10},
                       {"rss_bytes", u64(process, "rss_bytes")},
                       {"bitrate_out_kbps", std::round(num(process, "bitrate_out_kbps"))},
                       {"merge_hold_ms", std::round(num(process, "merge_hold_ms") * 10) / 10},
                       {"merge_video_frames", u64(process, "merge_video_frames")},
                       {"send_method", str(process, "send_method", "sendmsg")}});
    if (process.contains("server_started_ms"))
      started = std::min(started, process.value("server_started_ms", now_unix_ms));
    master_pid = w.value("master_pid", master_pid);
    version = w.value("version", version);
    in_kbps += num(process, "bitrate_in_kbps");
    out_kbps += num(process, "bitrate_out_kbps");
  }
  const json streams = stream_items(gathered, now_unix_ms);
  uint64_t rtmp = 0, flv = 0, hls = 0, publishers = 0;
  for (const json& s : streams) {
    rtmp += s["players"]["rtmp"].get<uint64_t>();
    flv += s["players"]["flv"].get<uint64_t>();
    hls += s["players"]["hls"].get<uint64_t>();
    publishers += s["publisher"].is_object() ? 1 : 0;
  }
  uint64_t bytes_in = 0, bytes_out = 0;
  for (const json& r : arr(gathered, "rows")) {
    bytes_in += u64(r, "bytes_in");
    bytes_out += u64(r, "bytes_out");
  }
  return {{"version", version},
          {"pid", master_pid},
          {"uptime_s", std::round(static_cast<double>(now_unix_ms - started) / 100.0) / 10.0},
          {"workers", std::move(workers)},
          {"totals",
           {{"streams", streams.size()},
            {"publishers", publishers},
            {"players", {{"rtmp", rtmp}, {"flv", flv}, {"hls", hls}}},
            {"bytes_in", bytes_in},
            {"bytes_out", bytes_out},
            {"bitrate_in_kbps", std::round(in_kbps)},
            {"bitrate_out_kbps", std::round(out_kbps)}}},
          {"errors", gathered.value("errors", json::array())}};
}

}  // namespace rill::api
