#include "runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "av1_opus_source.h"
#include "client.h"
#include "context.h"
#include "flv_source.h"
#include "hevc_source.h"
#include "hls_client.h"
#include "http_flv_client.h"
#include "multitrack_source.h"
#include "rtmp_client.h"

namespace rill::loadgen {

std::atomic<bool> g_interrupted{false};

namespace {

enum class Kind { RtmpPlayer, Publisher, FlvPlayer, HlsPlayer };

struct Planned {
  Kind kind;
  Url url;
  const Endpoint* endpoint;
  int64_t offset_ns;  // start time relative to the thread's ramp base
};

// A shared start signal: fanout players wait for the publisher (0 = not yet).
struct Shared {
  std::atomic<int64_t> players_go_ns{0};
  SendTimeBoard board;
};

struct Worker {
  explicit Worker(const Options& o) : ctx(o) {}
  ThreadContext ctx;  // declared first: destroyed after the clients
  std::vector<Planned> plan;
  std::vector<ClientRecord> records;  // sized up front: clients keep references
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<RtmpClient*> publishers;
  size_t next = 0;
  int64_t start_ns = 0;
  Planned* fanout_publisher = nullptr;

  void run(Shared& shared, std::shared_ptr<const FlvSource> source, bool fanout, int64_t timeout_ns);
  Client* create(const Planned& p, size_t index, const std::shared_ptr<const FlvSource>& source);
};

Client* Worker::create(const Planned& p, size_t index, const std::shared_ptr<const FlvSource>& source) {
  ClientRecord& rec = records[index];
  std::unique_ptr<Client> c;
  switch (p.kind) {
    case Kind::RtmpPlayer:
      c = std::make_unique<RtmpClient>(ctx, rec, *p.endpoint, p.url, RtmpClient::Role::Player);
      break;
    case Kind::Publisher: {
      auto pub =
          std::make_unique<RtmpClient>(ctx, rec, *p.endpoint, p.url, RtmpClient::Role::Publisher, source);
      publishers.push_back(pub.get());
      c = std::move(pub);
      break;
    }
    case Kind::FlvPlayer:
      c = std::make_unique<HttpFlvClient>(ctx, rec, *p.endpoint, p.url, ctx.opt.http10);
      break;
    case Kind::HlsPlayer:
      c = std::make_unique<HlsClient>(ctx, rec, *p.endpoint, p.url, ctx.opt.http10);
      break;
  }
  clients.push_back(std::move(c));
  clients.back()->start();
  return clients.back().get();
}

void Worker::run(Shared& shared, std::shared_ptr<const FlvSource> source, bool fanout, int64_t timeout_ns) {
  Loop& loop = ctx.loop;
  records.resize(plan.size() + (fanout_publisher ? 1 : 0));
  clients.reserve(records.size());
  if (fanout_publisher) {
    create(*fanout_publisher, plan.size(), source);  // the last record
  }
  constexpr int64_t kTick = 5 * kNsPerMs;
  loop.every(kTick, [&, fanout]() {
    int64_t now = now_ns();
    int64_t base = start_ns;
    if (fanout) {
      if (fanout_publisher) {
        const ClientRecord& pr = records.back();
        if (pr.streaming_ns && shared.players_go_ns.load(std::memory_order_relaxed) == 0) {
          // Players start a second into the publish, so the server has a GOP to serve.
          shared.players_go_ns.store(pr.streaming_ns + kNsPerSec, std::memory_order_relaxed);
        }
      }
      base = shared.players_go_ns.load(std::memory_order_relaxed);
      if (base == 0) base = INT64_MAX;
    }
    while (next < plan.size() && base != INT64_MAX && base + plan[next].offset_ns <= now) {
      create(plan[next], next, source);
      ++next;
    }
    for (RtmpClient* p : publishers) p->pump(now);
  });
  loop.every(200 * kNsPerMs, [&, timeout_ns]() {
    int64_t now = now_ns();
    for (auto& c : clients) {
      if (c->open()) c->check_setup_timeout(now, timeout_ns);
    }
  });
  loop.run();
  for (auto& c : clients) c->close_at_end();
}

void raise_fd_limit(int want) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  rlim_t need = static_cast<rlim_t>(want) + 64;
  if (rl.rlim_cur >= need) return;
  rl.rlim_cur = std::min(rl.rlim_max, std::max(need, rl.rlim_cur));
  setrlimit(RLIMIT_NOFILE, &rl);
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < need) {
    std::fprintf(stderr,
                 "rill-bench: warning: open files limited to %llu, %d connections need more (ulimit -n)\n",
                 static_cast<unsigned long long>(rl.rlim_cur), want);
  }
}

double cpu_seconds(const timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) / 1e6; }

using Workers = std::vector<std::unique_ptr<Worker>>;

// The plan: connection j starts j / ramp seconds after the base, on thread j % T. Returns the
// number of connections planned (fanout: players only; its publisher is `fanout_pub`).
int plan_connections(const Options& opt, Workers& workers, const Endpoint& ep,
                     const std::optional<Endpoint>& flv_ep, Planned& fanout_pub) {
  const int threads = static_cast<int>(workers.size());
  auto add = [&](Kind kind, Url url, const Endpoint* e, int j) {
    Planned p{kind, std::move(url), e, static_cast<int64_t>(double(j) / opt.ramp * 1e9)};
    workers[size_t(j % threads)]->plan.push_back(std::move(p));
  };
  if (opt.mode == Mode::Fanout) {
    workers[0]->fanout_publisher = &fanout_pub;
    // Interleave the two kinds of players in proportion, so both ramp up together.
    int n = opt.rtmp_players, m = opt.flv_players;
    int a = 0, b = 0;
    for (int j = 0; j < n + m; ++j) {
      bool take_flv = b < m && (a >= n || double(b) / m < double(a) / std::max(n, 1));
      if (take_flv) {
        add(Kind::FlvPlayer, *opt.flv_url, &*flv_ep, j);
        ++b;
      } else {
        add(Kind::RtmpPlayer, opt.url, &ep, j);
        ++a;
      }
    }
    return n + m;
  }
  for (int j = 0; j < opt.connections; ++j) {
    switch (opt.mode) {
      case Mode::RtmpPublish:
        add(Kind::Publisher, opt.connections > 1 ? with_stream_suffix(opt.url, j) : opt.url, &ep, j);
        break;
      case Mode::RtmpPlay:
        add(Kind::RtmpPlayer, opt.url, &ep, j);
        break;
      case Mode::FlvPlay:
        add(Kind::FlvPlayer, opt.url, &ep, j);
        break;
      case Mode::HlsPlay:
        add(Kind::HlsPlayer, opt.url, &ep, j);
        break;
      case Mode::Fanout:
        break;
    }
  }
  return opt.connections;
}

// One progress line on stderr.
void print_progress(const Options& opt, const Workers& workers, int64_t now, int64_t start, uint64_t bytes,
                    uint64_t prev_bytes, int64_t prev_t, int target) {
  int conns = 0;
  uint64_t errors = 0;
  for (auto& w : workers) {
    conns += w->ctx.streaming.load(std::memory_order_relaxed);
    errors += w->ctx.error_count.load(std::memory_order_relaxed);
  }
  if (opt.mode == Mode::Fanout && workers[0]->records.size() && workers[0]->records.back().streaming_ns &&
      !workers[0]->records.back().dropped) {
    --conns;  // the publisher is not a player
  }
  double mbps = now > prev_t ? double(bytes - prev_bytes) * 8.0 / (double(now - prev_t) / 1e9) / 1e6 : 0;
  std::fprintf(stderr, "t=%llds conns=%d/%d Mbps=%.1f errors=%" PRIu64 "\n",
               static_cast<long long>((now - start + kNsPerSec / 2) / kNsPerSec), conns, target, mbps,
               errors);
}

// Samples the measured byte count once a second until -d seconds passed or the run was
// interrupted. Returns the end time.
int64_t sample_until_end(const Options& opt, const Workers& workers, int64_t start, int target,
                         std::vector<std::pair<int64_t, uint64_t>>& samples) {
  const int64_t end_at = start + static_cast<int64_t>(opt.duration_s * 1e9);
  const bool measure_tx = opt.mode == Mode::RtmpPublish;
  auto total_bytes = [&]() {
    uint64_t t = 0;
    for (auto& w : workers)
      t += (measure_tx ? w->ctx.tx_bytes : w->ctx.rx_bytes).load(std::memory_order_relaxed);
    return t;
  };
  uint64_t prev_bytes = 0;
  int64_t prev_t = start;
  for (int sec = 1;; ++sec) {
    int64_t wake = std::min(end_at, start + sec * kNsPerSec);
    while (now_ns() < wake && !g_interrupted.load()) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::clamp<int64_t>((wake - now_ns()) / kNsPerMs, 1, 50)));
    }
    int64_t now = now_ns();
    uint64_t bytes = total_bytes();
    samples.emplace_back(now, bytes);
    if (opt.progress && now < end_at && !g_interrupted.load()) {
      print_progress(opt, workers, now, start, bytes, prev_bytes, prev_t, target);
    }
    prev_bytes = bytes;
    prev_t = now;
    if (now >= end_at || g_interrupted.load()) return now;
  }
}

struct RunResult {
  int target = 0;
  int64_t start = 0;
  int64_t end = 0;
  std::vector<std::pair<int64_t, uint64_t>> samples;
  rusage ru0{}, ru1{};
};

nlohmann::json make_report(const Options& opt, Workers& workers, const RunResult& run,
                           const std::shared_ptr<const FlvSource>& source) {
  const bool fanout = opt.mode == Mode::Fanout;
  ReportInput in;
  in.mode = to_string(opt.mode);
  in.url = opt.url.to_string();
  in.target = run.target;
  in.start_ns = run.start;
  in.end_ns = run.end;
  in.byte_samples = run.samples;
  in.measure_publishers = opt.mode == Mode::RtmpPublish;
  if (fanout) in.latency.emplace();
  double max_lag_ms = 0;
  for (auto& w : workers) {
    for (auto& r : w->records) {
      r.finish(run.end);
      in.records.push_back(r);
    }
    for (auto& [k, v] : w->ctx.errors) in.errors[k] += v;
    if (fanout) in.latency->merge(w->ctx.latency);
    for (RtmpClient* p : w->publishers) max_lag_ms = std::max(max_lag_ms, p->max_lag_ms());
  }
  in.cpu_user_s = cpu_seconds(run.ru1.ru_utime) - cpu_seconds(run.ru0.ru_utime);
  in.cpu_sys_s = cpu_seconds(run.ru1.ru_stime) - cpu_seconds(run.ru0.ru_stime);
  nlohmann::json report = build_report(in);
  if (fanout) {
    const ClientRecord& pr = workers[0]->records.back();
    report["url"] = opt.url.to_string();
    if (opt.flv_url) report["flv_url"] = opt.flv_url->to_string();
    report["publisher"] = {{"ok", pr.reached_streaming() && !pr.dropped},
                           {"frames", {{"video", pr.video}, {"audio", pr.audio}}},
                           {"mbps", std::round((pr.rate_mbps(run.end).value_or(0)) * 1000) / 1000},
                           {"max_lag_ms", std::round(max_lag_ms * 10) / 10}};
  } else if (in.measure_publishers) {
    report["max_lag_ms"] = std::round(max_lag_ms * 10) / 10;
  }
  if (source) report["source_kbps"] = std::round(source->bitrate_bps() / 100) / 10;
  return report;
}

}  // namespace

nlohmann::json run_bench(const Options& opt) {
  const bool fanout = opt.mode == Mode::Fanout;
  std::shared_ptr<const FlvSource> source;
  if (!opt.track_inputs.empty()) {
    std::vector<std::string> paths{opt.input};
    paths.insert(paths.end(), opt.track_inputs.begin(), opt.track_inputs.end());
    source = load_multitrack(paths);
  } else if (is_ivf_path(opt.input)) {
    source = load_av1_opus(opt.input, opt.audio_input);
  } else if (!opt.input.empty()) {
    source = is_hevc_annexb_path(opt.input) ? load_hevc_annexb(opt.input) : FlvSource::load(opt.input);
  }

  std::string err;
  auto ep = resolve(opt.url.host, opt.url.port, &err);
  if (!ep) throw std::runtime_error(err);
  std::optional<Endpoint> flv_ep;
  if (opt.flv_url) {
    flv_ep = resolve(opt.flv_url->host, opt.flv_url->port, &err);
    if (!flv_ep) throw std::runtime_error(err);
  }

  Workers workers;
  for (int i = 0; i < opt.threads; ++i) workers.push_back(std::make_unique<Worker>(opt));
  Shared shared;
  Planned fanout_pub{Kind::Publisher, opt.url, &*ep, 0};
  RunResult run;
  run.target = plan_connections(opt, workers, *ep, flv_ep, fanout_pub);
  raise_fd_limit(run.target + 1);
  if (fanout) {
    for (auto& w : workers) w->ctx.board = &shared.board;
  }

  getrusage(RUSAGE_SELF, &run.ru0);
  run.start = now_ns();
  const int64_t timeout_ns = static_cast<int64_t>(opt.setup_timeout_s * 1e9);
  std::vector<std::thread> pool;
  for (auto& w : workers) {
    w->start_ns = run.start;
    pool.emplace_back([&, wp = w.get()]() { wp->run(shared, source, fanout, timeout_ns); });
  }
  run.end = sample_until_end(opt, workers, run.start, run.target, run.samples);
  for (auto& w : workers) w->ctx.loop.request_stop();
  for (auto& t : pool) t.join();
  getrusage(RUSAGE_SELF, &run.ru1);
  return make_report(opt, workers, run, source);
}

}  // namespace rill::loadgen
