#pragma once
// WorkerMonitor: what the control plane (docs/api.md) needs from one worker beyond its live
// sessions and streams — running totals that outlive sessions, published into the shared
// ServerCounters; the HLS viewers this worker served; input bitrates over the last 10 s; and the
// process's own figures (CPU, memory, descriptors, event-loop lag). One per worker, ticking once
// a second on the worker's timers; everything is read on the worker's thread.
//
// HLS has no connection to count: a viewer is a distinct (address, User-Agent) that asked for a
// playlist or segment of a stream within the last 2 x target duration (at least 4 s). Each
// worker reports the viewers it saw; the API merges them across workers (a viewer whose requests
// land on two workers counts once).
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "rill/core/timer_queue.h"
#include "rill/net/worker_core.h"
#include "rill/workers/server_counters.h"
#include "rill/workers/stream_tally.h"

namespace rill::workers {

class OwnershipTable;
class StreamLocator;

class WorkerMonitor {
 public:
  // `locator` (null: a lone worker, nothing shared) says which streams this worker owns; it
  // outlives the monitor.
  WorkerMonitor(net::WorkerCore& ctx, const StreamLocator* locator, ServerCounters* shared, uint32_t slot);
  ~WorkerMonitor();
  WorkerMonitor(const WorkerMonitor&) = delete;
  WorkerMonitor& operator=(const WorkerMonitor&) = delete;

  // Starts the 1 s tick and observes the session set's retirements.
  void start();

  // An HLS playlist or segment of `key` was asked for by a viewer (admitted).
  void hls_requested(const std::string& key, std::string_view addr, std::string_view user_agent,
                     std::chrono::milliseconds target_duration);
  // `bytes` of an HLS playlist or segment of `key` went out.
  void hls_sent(const std::string& key, uint64_t bytes);

  // This worker's slot row of the shared counters, published first (so that no value reported
  // is ever above what the row holds): {bytes_in, bytes_out, accepted: {rtmp, flv, hls,
  // worker-link}, dropped_frames, hls_segments, cpu_seconds}; all_rows adds restarts (respawns).
  nlohmann::json counters();
  // {cpu_pct, rss_bytes, open_fds, max_fds, loop_lag: {sum_s, count, max_s}, bitrate_in_kbps,
  // bitrate_out_kbps, merge_hold_ms}.
  nlohmann::json process() const;
  // Per stream key, the HLS viewers seen within their window: {"live/a": ["addr ua", ...]}.
  nlohmann::json hls_viewers();
  // Adds what this worker did for each stream since it last did so to the shared per-stream
  // totals (stream_totals.h): once a second, and before every statistics answer, so that what
  // the owner reports of a stream was published first. Nothing without an ownership table.
  void publish_streams();
  // The totals of `key`'s current life, when this worker owns it and the shared area exists:
  // every worker's part, those of killed workers included (publish_streams() first).
  std::optional<StreamTotals::Values> stream_totals(const std::string& key) const;
  // Bytes sent to players of `key` by sessions already gone, plus HLS bytes of `key`.
  uint64_t gone_bytes_out(const std::string& key) const;
  uint64_t hls_segments(const std::string& key) const;
  // Input bitrate of a stream of this worker over the last 10 s (0 until two samples).
  double bitrate_in_kbps(const std::string& key) const;
  // A TimerQueue time as wall clock (ms since the epoch).
  int64_t unix_ms(int64_t timer_ms) const;
  // Every slot's row of the shared counters (this worker's published first), read now: the
  // totals of the whole server, dead workers' included. [{slot, bytes_in, ...}] for slots < n.
  nlohmann::json all_rows(uint32_t slots);
  // When the server (the master) started, ms since the epoch (this process's start without
  // shared counters).
  int64_t server_started_unix_ms() const;

 private:
  struct Totals {
    uint64_t bytes_in = 0, bytes_out = 0, dropped = 0;
  };
  struct Rate {  // (time, bytes) samples, one a tick, the last 11
    std::deque<std::pair<int64_t, uint64_t>> samples;
    uint64_t round = 0;  // the last tick that saw the stream
    void add(int64_t t, uint64_t bytes);
    double kbps() const;
  };
  struct Produced {  // a stream's HLS segments, last seen, and the round that saw them
    uint64_t produced = 0;
    uint64_t round = 0;
  };
  struct Published {  // counters()'s values, as published
    uint64_t bytes_in = 0, bytes_out = 0, rtmp = 0, flv = 0, hls = 0, link = 0, download = 0, dropped = 0;
    uint64_t hls_segments = 0, cpu_us = 0, record_bytes = 0, record_failures = 0, download_timeouts = 0;
  };
  void tick();
  void retired(const net::SessionInfo& i);
  void count_streams();
  OwnershipTable* table() const;
  Totals live_totals();
  Published publish_counters(const Totals& t, uint64_t hls_segments);
  void sample_streams(int64_t now);
  void sample_process(int64_t now, const Totals& t);
  uint64_t hls_segments_total();

  net::WorkerCore& ctx_;
  const StreamLocator* locator_;
  ServerCounters* shared_;
  int64_t started_unix_ms_;
  CounterPublisher publisher_;
  std::optional<TimerId> timer_;
  int64_t expected_tick_ms_ = 0;
  Totals gone_;  // of retired sessions
  uint64_t hls_bytes_ = 0, hls_requests_ = 0;
  std::unordered_map<std::string, uint64_t> gone_out_;  // per stream: retired players + HLS bytes
  StreamTally tally_;  // this worker's part of the shared per-stream totals, not yet published
  std::map<std::string, std::map<std::string, int64_t>> hls_seen_;  // key -> viewer -> expiry
  std::string hls_viewer_scratch_;                                  // hls_requested's viewer name, reused
  std::unordered_map<std::string, Produced> hls_produced_;          // key -> segments, last seen
  uint64_t hls_produced_gone_ = 0;
  uint64_t hls_round_ = 0;
  uint64_t hls_segments_ = 0;  // hls_segments_total() of the last tick
  std::unordered_map<std::string, Rate> stream_rates_;
  uint64_t sample_round_ = 0;
  Rate in_rate_, out_rate_;
  // process
  uint64_t cpu_us_ = 0;
  double cpu_pct_ = 0;
  int64_t cpu_sampled_ms_ = 0;
  double lag_sum_s_ = 0, lag_max_s_ = 0;
  uint64_t lag_count_ = 0;
};

}  // namespace rill::workers
