#pragma once
// rill-bench statistics: what each connection records, percentiles, a mergeable latency
// histogram, the steady-state rate, and the JSON report. Pure computations (no I/O, no clock).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rill::loadgen {

// p-th percentile (0 < p <= 100) by nearest rank: the smallest value with at least p% of the
// values at or below it. nullopt for no values. Sorts `values` in place.
std::optional<double> percentile(std::vector<double>& values, double p);

struct Summary {
  double p50 = 0;
  double p99 = 0;
  double max = 0;
};
std::optional<Summary> summarize(std::vector<double> values);
// {"p50":..,"p99":..,"max":..} rounded to 0.1, or null.
nlohmann::json to_json(const std::optional<Summary>& s);

// Latency samples in a log-linear histogram: exact below 1024 us, then 512 sub-buckets per power
// of two (< 0.2 % relative error). Fixed memory, so millions of samples (5000 players x 25 fps)
// cost nothing; histograms from several threads merge by addition.
class LatencyHistogram {
 public:
  void add_ns(int64_t ns);
  void merge(const LatencyHistogram& other);
  uint64_t count() const { return count_; }
  // Milliseconds; nullopt when empty. max() is the exact largest sample.
  std::optional<double> percentile_ms(double p) const;
  std::optional<Summary> summary_ms() const;

  static size_t bucket_of(uint64_t us);
  static uint64_t bucket_value_us(size_t bucket);  // representative (upper bound) of a bucket

 private:
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  int64_t max_ns_ = 0;
};

// What one connection did. Times are CLOCK_MONOTONIC ns; 0 means "never".
struct ClientRecord {
  enum class Kind : uint8_t { RtmpPlayer, FlvPlayer, HlsPlayer, Publisher };
  Kind kind = Kind::RtmpPlayer;

  int64_t start_ns = 0;        // connect() issued
  int64_t play_ns = 0;         // play / publish / GET sent: the player's play-start time
  int64_t streaming_ns = 0;    // server accepted (NetStream.Play.Start / Publish.Start / HTTP 200)
  int64_t first_video_ns = 0;  // first video message / tag / TS segment byte
  int64_t first_key_ns = 0;    // first coded keyframe (not a sequence header)
  int64_t last_media_ns = 0;
  int64_t longest_gap_ns = 0;  // longest time between consecutive media arrivals
  int64_t closed_ns = 0;       // connection lost before the end of the run
  int64_t mark_ns = 0;         // steady-state mark: first arrival >= 2 s after streaming_ns
  uint64_t mark_bytes = 0;     // bytes at mark_ns
  uint64_t bytes = 0;          // received (players) or sent (publishers), all protocol bytes
  uint64_t video = 0;          // video messages / tags received or sent
  uint64_t audio = 0;
  uint64_t segments = 0;       // HLS
  bool failed = false;         // never got to streaming
  bool dropped = false;        // got to streaming, then lost
  int64_t stall_threshold_ns = 1000 * 1'000'000LL;

  bool reached_streaming() const { return streaming_ns != 0; }
  bool is_player() const { return kind != Kind::Publisher; }
  // Called on every media arrival (or, for publishers, send).
  void on_media(int64_t now);
  // Called on every byte count change (players: after each read).
  void on_bytes(uint64_t n, int64_t now);
  // At the end of the run: a connection still open counts the time since its last media as a gap.
  void finish(int64_t end_ns);
  // Per-connection rate over its steady state (after its first 2 s), Mbit/s; nullopt when it
  // never streamed.
  std::optional<double> rate_mbps(int64_t end_ns) const;
};

inline constexpr int64_t kSteadyExcludeNs = 2'000'000'000LL;

// Mean rate over [start + 2 s, end] from cumulative byte samples (time ns, total bytes), taken
// once a second and at the end. Falls back to the whole run when it is shorter than that.
double steady_mbps(const std::vector<std::pair<int64_t, uint64_t>>& samples, int64_t start_ns);

struct ReportInput {
  std::string mode;
  std::string url;
  int target = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::vector<ClientRecord> records;  // every connection, players and publishers
  std::vector<std::pair<int64_t, uint64_t>> byte_samples;  // of the measured side
  bool measure_publishers = false;     // rtmp-publish: rates and frames are the publishers'
  std::optional<LatencyHistogram> latency;  // fanout only
  std::map<std::string, uint64_t> errors;
  double cpu_user_s = 0;
  double cpu_sys_s = 0;
};

nlohmann::json build_report(const ReportInput& in);

}  // namespace rill::loadgen
