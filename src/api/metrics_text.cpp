#include "rill/api/metrics_text.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include "rill/api/api_relays.h"
#include "rill/api/api_views.h"
#include "rill/api/json_fields.h"

namespace rill::api {

namespace {

using nlohmann::json;

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  }
  return buf;
}

// Writes one family: HELP, TYPE, then its samples.
class Family {
 public:
  Family(std::string& out, std::string_view name, std::string_view type, std::string_view help)
      : out_(out), name_(name) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // labels: "k1", "v1", "k2", "v2"...
  void sample(double value, std::initializer_list<std::string_view> labels = {},
              std::string_view suffix = "") {
    out_ += name_;
    out_ += suffix;
    if (labels.size() >= 2) {
      out_ += '{';
      bool first = true;
      for (auto it = labels.begin(); it + 1 < labels.end(); it += 2) {
        if (!first) out_ += ',';
        first = false;
        out_ += *it;
        out_ += "=\"";
        out_ += escape_label_value(*(it + 1));
        out_ += '"';
      }
      out_ += '}';
    }
    out_ += ' ';
    out_ += number(value);
    out_ += '\n';
  }

 private:
  std::string& out_;
  std::string name_;
};

using json_fields::arr;
using json_fields::num;

void server_families(std::string& out, const json& gathered, const json& server, const json& streams) {
  Family(out, "rill_build_info", "gauge", "Rill's version, as a label.")
      .sample(1, {"version", server.value("version", "")});
  Family(out, "rill_uptime_seconds", "gauge", "Seconds since the master started.")
      .sample(num(server, "uptime_s"));
  Family(out, "rill_workers", "gauge", "Worker processes that answered.")
      .sample(static_cast<double>(server["workers"].size()));
  Family(out, "rill_streams", "gauge", "Live streams (one publisher each).")
      .sample(static_cast<double>(streams.size()));

  std::map<std::string, double> live{
      {"rtmp", 0}, {"flv", 0}, {"hls", 0}, {"worker-link", 0}, {"download", 0}};
  for (const json& w : arr(gathered, "workers")) {
    const json c = w.value("connections", json::object());
    live["rtmp"] += num(c, "rtmp");
    live["flv"] += num(c, "http-flv");
    live["worker-link"] += num(c, "worker-link");
    live["download"] += num(w, "downloads");  // recordings' (docs/recording.md, "Downloads")
  }
  live["hls"] = server["totals"]["players"]["hls"].get<double>();
  Family conns(out, "rill_connections", "gauge", "Open connections (HLS: viewers seen lately) by protocol.");
  for (const auto& [proto, n] : live) conns.sample(n, {"proto", proto});

  std::map<std::string, double> accepted;
  double bytes_in = 0, bytes_out = 0;
  for (const json& r : arr(gathered, "rows")) {
    const json per_proto = r.value("accepted", json::object());
    for (const auto& [proto, n] : per_proto.items()) accepted[proto] += n.is_number() ? n.get<double>() : 0.0;
    bytes_in += num(r, "bytes_in");
    bytes_out += num(r, "bytes_out");
  }
  Family acc(out, "rill_connections_accepted_total", "counter",
             "Connections accepted (HLS: requests) by protocol.");
  for (const auto& [proto, n] : accepted) acc.sample(n, {"proto", proto});
  Family(out, "rill_bytes_in_total", "counter", "Bytes read from clients and workers.").sample(bytes_in);
  Family(out, "rill_bytes_out_total", "counter", "Bytes written to clients and workers.").sample(bytes_out);
}

void stream_families(std::string& out, const json& streams) {
  Family players(out, "rill_stream_players", "gauge", "Players of a stream by protocol.");
  for (const json& s : streams) {
    for (const char* proto : {"rtmp", "flv", "hls"}) {
      players.sample(num(s["players"], proto),
                     {"app", s.value("app", ""), "stream", s.value("name", ""), "proto", proto});
    }
  }
  struct Per {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const json&);
  };
  static const Per kPer[] = {
      {"rill_stream_bytes_in_total", "counter", "Bytes the stream's publisher sent.",
       [](const json& s) { return num(s, "bytes_in"); }},
      {"rill_stream_bytes_out_total", "counter", "Bytes sent to the stream's players (all workers).",
       [](const json& s) { return num(s, "bytes_out"); }},
      {"rill_stream_bitrate_in_kbps", "gauge", "Input bitrate over the last 10 s.",
       [](const json& s) { return num(s, "bitrate_in_kbps"); }},
      {"rill_stream_uptime_seconds", "gauge", "Seconds since the publisher started.",
       [](const json& s) { return num(s, "uptime_s"); }},
      {"rill_dropped_frames_total", "counter", "Frames dropped for slow players of the stream.",
       [](const json& s) { return num(s, "dropped_frames"); }},
      {"rill_hls_segments_total", "counter", "HLS segments produced for the stream.",
       [](const json& s) { return num(s["hls"], "segments_total"); }},
  };
  for (const Per& p : kPer) {
    Family f(out, p.name, p.type, p.help);
    for (const json& s : streams)
      f.sample(p.value(s), {"app", s.value("app", ""), "stream", s.value("name", "")});
  }
}

void relay_families(std::string& out, const json& gathered) {
  Family up(out, "rill_relay_up", "gauge", "1 while a relay (edge pull, push, pull) moves media, else 0.");
  for (const json& r : relay_items(gathered)) {
    up.sample(r.value("state", "") == "up" ? 1 : 0,
              {"kind", r.value("kind", ""), "app", r.value("app", ""), "stream", r.value("name", ""), "url",
               r.value("url", "")});
  }
}

// Server-wide: a per-stream label would grow with every stream ever recorded.
void record_families(std::string& out, const json& gathered, const json& streams) {
  double bytes = 0, failures = 0, recording = 0, download_timeouts = 0;
  for (const json& r : arr(gathered, "rows")) {
    bytes += num(r, "record_bytes");
    failures += num(r, "record_failures");
    download_timeouts += num(r, "download_send_timeouts");
  }
  for (const json& s : streams) {
    if (s.value("record", json::object()).value("state", "") == "recording") ++recording;
  }
  Family(out, "rill_record_bytes_total", "counter", "Bytes written to recording files.").sample(bytes);
  Family(out, "rill_record_failures_total", "counter",
         "Recordings stopped by a write error (disk full, EACCES, EIO) or a full write queue.")
      .sample(failures);
  Family(out, "rill_recordings", "gauge", "Streams whose recording file is being written.").sample(recording);
  Family(out, "rill_download_send_timeouts_total", "counter",
         "Recording downloads closed because their client took no byte within http.timeout.")
      .sample(download_timeouts);
}

// apps.NAME.exec (docs/abr.md): summed over the workers that answered.
void exec_families(std::string& out, const json& gathered) {
  double children = 0, restarts = 0;
  for (const json& w : arr(gathered, "workers")) {
    const json e = w.value("exec", json::object());
    children += num(e, "children");
    restarts += num(e, "restarts_total");
  }
  Family(out, "rill_exec_children", "gauge", "Exec hook children running.").sample(children);
  Family(out, "rill_exec_restarts_total", "counter",
         "Exec hook children started again after an exit (the live workers' counts).")
      .sample(restarts);
}

void worker_families(std::string& out, const json& gathered) {
  Family cpu(out, "rill_worker_cpu_seconds_total", "counter", "CPU time of the worker slot's processes.");
  for (const json& r : arr(gathered, "rows"))
    cpu.sample(num(r, "cpu_seconds"), {"worker", std::to_string(r.value("slot", 0))});
  Family restarts(out, "rill_worker_restarts_total", "counter",
                  "Deaths of the worker slot's process that the master respawned (not reloads).");
  for (const json& r : arr(gathered, "rows"))
    restarts.sample(num(r, "restarts"), {"worker", std::to_string(r.value("slot", 0))});
  // Per process: a slot has two during a reload (the retiring one and the new one), told apart by pid.
  const int newest = newest_generation(gathered);
  Family retiring(out, "rill_worker_retiring", "gauge",
                  "1 for a worker of an older generation (after a reload), else 0.");
  for (const json& w : arr(gathered, "workers")) {
    retiring.sample(w.value("generation", 0) < newest ? 1 : 0,
                    {"worker", std::to_string(w.value("slot", 0)), "pid", std::to_string(w.value("pid", 0))});
  }
  const auto per_worker =
      [&gathered](const std::function<void(const json&, const std::string&, const std::string&)>& f) {
        for (const json& w : arr(gathered, "workers")) {
          f(w.value("process", json::object()), std::to_string(w.value("slot", 0)),
            std::to_string(w.value("pid", 0)));
        }
      };
  Family rss(out, "rill_worker_resident_memory_bytes", "gauge", "Resident memory of the worker.");
  per_worker([&](const json& p, const std::string& id, const std::string& pid) {
    rss.sample(num(p, "rss_bytes"), {"worker", id, "pid", pid});
  });
  Family fds(out, "rill_worker_open_fds", "gauge", "Open file descriptors of the worker.");
  per_worker([&](const json& p, const std::string& id, const std::string& pid) {
    fds.sample(num(p, "open_fds"), {"worker", id, "pid", pid});
  });
  Family max_fds(out, "rill_worker_max_fds", "gauge",
                 "The worker's descriptor limit (soft RLIMIT_NOFILE; 0: unknown).");
  per_worker([&](const json& p, const std::string& id, const std::string& pid) {
    max_fds.sample(num(p, "max_fds"), {"worker", id, "pid", pid});
  });
  Family hold(
      out, "rill_worker_merge_hold_seconds", "gauge",
      "How long the worker holds player writes to merge them (merge_writes; auto: follows the load).");
  per_worker([&](const json& p, const std::string& id, const std::string& pid) {
    hold.sample(num(p, "merge_hold_ms") / 1000.0, {"worker", id, "pid", pid});
  });
  Family frames(
      out, "rill_worker_merge_video_frames", "gauge",
      "Video frames per player write under merge_writes: auto (0: not held; 1: audio waits for video).");
  per_worker([&](const json& p, const std::string& id, const std::string& pid) {
    frames.sample(num(p, "merge_video_frames"), {"worker", id, "pid", pid});
  });
  Family lag(out, "rill_worker_loop_lag_seconds", "summary", "How late the worker's 1 s timer ran.");
  per_worker([&](const json& p, const std::string& id, const std::string& pid) {
    const json l = p.value("loop_lag", json::object());
    lag.sample(num(l, "sum_s"), {"worker", id, "pid", pid}, "_sum");
    lag.sample(num(l, "count"), {"worker", id, "pid", pid}, "_count");
  });
}

}  // namespace

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string metrics_text(const json& gathered, int64_t now_unix_ms) {
  const json server = server_view(gathered, now_unix_ms);
  const json streams = stream_items(gathered, now_unix_ms);
  std::string out;
  server_families(out, gathered, server, streams);
  stream_families(out, streams);
  relay_families(out, gathered);
  record_families(out, gathered, streams);
  exec_families(out, gathered);
  worker_families(out, gathered);
  return out;
}

}  // namespace rill::api
