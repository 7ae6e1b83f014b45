#include "stats.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace rill::loadgen {

std::optional<double> percentile(std::vector<double>& values, double p) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  size_t idx = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(idx, values.size() - 1)];
}

std::optional<Summary> summarize(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  Summary s;
  s.p50 = *percentile(values, 50);
  s.p99 = *percentile(values, 99);
  s.max = values.back();
  return s;
}

static double round1(double v) { return std::round(v * 10.0) / 10.0; }

nlohmann::json to_json(const std::optional<Summary>& s) {
  if (!s) return nullptr;
  return {{"p50", round1(s->p50)}, {"p99", round1(s->p99)}, {"max", round1(s->max)}};
}

// ---- LatencyHistogram ----

size_t LatencyHistogram::bucket_of(uint64_t us) {
  if (us < 1024) return us;
  int e = std::bit_width(us) - 1;  // 2^e <= us < 2^(e+1), e >= 10
  uint64_t sub = (us >> (e - 9)) - 512;  // 0..511
  return 1024 + size_t(e - 10) * 512 + sub;
}

uint64_t LatencyHistogram::bucket_value_us(size_t b) {
  if (b < 1024) return b;
  size_t e = (b - 1024) / 512 + 10;
  uint64_t sub = (b - 1024) % 512 + 512;
  return ((sub + 1) << (e - 9)) - 1;
}

void LatencyHistogram::add_ns(int64_t ns) {
  if (ns < 0) ns = 0;
  size_t b = bucket_of(static_cast<uint64_t>(ns / 1000));
  if (b >= buckets_.size()) buckets_.resize(b + 1);
  ++buckets_[b];
  ++count_;
  max_ns_ = std::max(max_ns_, ns);
}

void LatencyHistogram::merge(const LatencyHistogram& o) {
  if (o.buckets_.size() > buckets_.size()) buckets_.resize(o.buckets_.size());
  for (size_t i = 0; i < o.buckets_.size(); ++i) buckets_[i] += o.buckets_[i];
  count_ += o.count_;
  max_ns_ = std::max(max_ns_, o.max_ns_);
}

std::optional<double> LatencyHistogram::percentile_ms(double p) const {
  if (count_ == 0) return std::nullopt;
  double rank = std::ceil(p / 100.0 * static_cast<double>(count_));
  uint64_t want = rank < 1 ? 1 : static_cast<uint64_t>(rank);
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= want) {
      double v = static_cast<double>(bucket_value_us(i)) / 1000.0;
      return std::min(v, static_cast<double>(max_ns_) / 1e6);
    }
  }
  return static_cast<double>(max_ns_) / 1e6;
}

std::optional<Summary> LatencyHistogram::summary_ms() const {
  if (count_ == 0) return std::nullopt;
  return Summary{*percentile_ms(50), *percentile_ms(99), static_cast<double>(max_ns_) / 1e6};
}

// ---- ClientRecord ----

void ClientRecord::on_media(int64_t now) {
  if (last_media_ns) longest_gap_ns = std::max(longest_gap_ns, now - last_media_ns);
  last_media_ns = now;
}

void ClientRecord::on_bytes(uint64_t n, int64_t now) {
  bytes += n;
  if (!mark_ns && streaming_ns && now - streaming_ns >= kSteadyExcludeNs) {
    mark_ns = now;
    mark_bytes = bytes;
  }
}

void ClientRecord::finish(int64_t end_ns) {
  if (!closed_ns && last_media_ns) longest_gap_ns = std::max(longest_gap_ns, end_ns - last_media_ns);
}

std::optional<double> ClientRecord::rate_mbps(int64_t end_ns) const {
  if (!streaming_ns) return std::nullopt;
  int64_t end = closed_ns ? closed_ns : end_ns;
  int64_t from = mark_ns ? mark_ns : streaming_ns;
  uint64_t base = mark_ns ? mark_bytes : 0;
  if (end <= from) return 0.0;
  return static_cast<double>(bytes - base) * 8.0 / (static_cast<double>(end - from) / 1e9) / 1e6;
}

double steady_mbps(const std::vector<std::pair<int64_t, uint64_t>>& samples, int64_t start_ns) {
  if (samples.empty()) return 0;
  const auto& last = samples.back();
  std::pair<int64_t, uint64_t> from{start_ns, 0};
  for (const auto& s : samples) {
    if (s.first - start_ns >= kSteadyExcludeNs) {
      from = s;
      break;
    }
  }
  if (last.first - from.first < 500'000'000LL) from = {start_ns, 0};  // too short
  if (last.first <= from.first) return 0;
  return static_cast<double>(last.second - from.second) * 8.0 /
         (static_cast<double>(last.first - from.first) / 1e9) / 1e6;
}

// ---- report ----

nlohmann::json build_report(const ReportInput& in) {
  using nlohmann::json;
  int ok = 0, failed = 0, dropped = 0, with_video = 0, stalls = 0;
  std::vector<double> rates, first_video, first_key;
  int64_t longest_gap = 0;
  uint64_t video = 0, audio = 0, segments = 0;
  bool any_gap = false;
  for (const auto& r : in.records) {
    bool measured = in.measure_publishers ? !r.is_player() : r.is_player();
    if (!measured) continue;
    if (r.failed) ++failed;
    else if (r.dropped) ++dropped;
    else if (r.reached_streaming()) ++ok;
    else ++failed;  // never got there before the end of the run
    video += r.video;
    audio += r.audio;
    segments += r.segments;
    if (r.video || r.segments) ++with_video;
    if (auto rate = r.rate_mbps(in.end_ns)) rates.push_back(*rate);
    if (r.first_video_ns && r.play_ns) first_video.push_back(double(r.first_video_ns - r.play_ns) / 1e6);
    if (r.first_key_ns && r.play_ns) first_key.push_back(double(r.first_key_ns - r.play_ns) / 1e6);
    if (r.last_media_ns) {
      any_gap = true;
      longest_gap = std::max(longest_gap, r.longest_gap_ns);
      if (r.longest_gap_ns > r.stall_threshold_ns) ++stalls;
    }
  }
  json j;
  j["mode"] = in.mode;
  j["url"] = in.url;
  j["duration_s"] = round1(double(in.end_ns - in.start_ns) / 1e9);
  j["connections"] = {{"target", in.target}, {"ok", ok}, {"failed", failed}, {"dropped", dropped},
                      {"with_video", with_video}};
  j["mbps"] = round1(steady_mbps(in.byte_samples, in.start_ns));
  std::optional<Summary> spread = summarize(rates);
  if (spread) {
    std::sort(rates.begin(), rates.end());
    j["rate_spread"] = {{"min_mbps", std::round(rates.front() * 1000) / 1000},
                        {"p50_mbps", std::round(spread->p50 * 1000) / 1000},
                        {"max_mbps", std::round(spread->max * 1000) / 1000}};
  } else {
    j["rate_spread"] = nullptr;
  }
  j["first_video_ms"] = to_json(summarize(first_video));
  j["first_keyframe_ms"] = to_json(summarize(first_key));
  j["longest_gap_ms"] = any_gap ? json(round1(double(longest_gap) / 1e6)) : json(nullptr);
  j["stalls"] = stalls;
  j["latency_ms"] = in.latency ? to_json(in.latency->summary_ms()) : json(nullptr);
  if (in.latency) j["latency_samples"] = in.latency->count();
  j["errors"] = json::object();
  for (const auto& [k, v] : in.errors) j["errors"][k] = v;
  j["frames"] = {{"video", video}, {"audio", audio}};
  if (segments) j["segments"] = segments;
  j["cpu"] = {{"user_s", std::round(in.cpu_user_s * 1000) / 1000}, {"sys_s", std::round(in.cpu_sys_s * 1000) / 1000}};
  return j;
}

}  // namespace rill::loadgen
