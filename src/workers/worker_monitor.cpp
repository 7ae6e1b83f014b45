#include "rill/workers/worker_monitor.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "rill/media/hls_store.h"
#include "rill/net/flush_scheduler.h"
#include "rill/record/file_writer.h"
#include "rill/workers/ownership_table.h"
#include "rill/workers/stream_locator.h"

namespace rill::workers {

namespace {

using nlohmann::json;
constexpr auto kTick = std::chrono::milliseconds(1000);

// A player of a live stream; a download of its recording (SessionKind::Download) is not one: its
// bytes are not the stream's players'.
bool plays_live(const net::SessionInfo& i) { return i.kind == net::SessionKind::Player && !i.stream.empty(); }
constexpr size_t kRateSamples = 11;  // 10 s between the oldest and the newest
constexpr int64_t kMinHlsWindowMs = 4000;

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t cpu_micros() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  const auto us = [](const timeval& t) {
    return static_cast<uint64_t>(t.tv_sec) * 1000000 + static_cast<uint64_t>(t.tv_usec);
  };
  return us(ru.ru_utime) + us(ru.ru_stime);
}

uint64_t rss_bytes() {
  unsigned long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  const int n = std::fscanf(f, "%lu %lu", &pages, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<uint64_t>(resident) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

size_t open_fds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return 0;
  size_t n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n > 0 ? n - 1 : 0;  // less the directory's own descriptor
}

// The soft RLIMIT_NOFILE: the most descriptors the worker may open (0: unknown).
uint64_t max_fds() {
  rlimit rl{};
  return ::getrlimit(RLIMIT_NOFILE, &rl) == 0 ? static_cast<uint64_t>(rl.rlim_cur) : 0;
}

}  // namespace

void WorkerMonitor::Rate::add(int64_t t, uint64_t bytes) {
  samples.emplace_back(t, bytes);
  while (samples.size() > kRateSamples) samples.pop_front();
}

double WorkerMonitor::Rate::kbps() const {
  if (samples.size() < 2) return 0;
  const auto& [t0, b0] = samples.front();
  const auto& [t1, b1] = samples.back();
  if (t1 <= t0 || b1 < b0) return 0;
  return static_cast<double>(b1 - b0) * 8.0 / static_cast<double>(t1 - t0);  // bits per ms = kbit/s
}

WorkerMonitor::WorkerMonitor(net::WorkerCore& ctx, const StreamLocator* locator, ServerCounters* shared,
                             uint32_t slot)
    : ctx_(ctx), locator_(locator), shared_(shared), started_unix_ms_(wall_ms()), publisher_(shared, slot) {}

WorkerMonitor::~WorkerMonitor() {
  if (timer_) ctx_.timers->cancel(*timer_);
  ctx_.sessions->set_retire_observer(nullptr);
  // A worker that stops (a retiring one included) leaves nothing it counted unpublished.
  counters();
  publish_streams();
}

void WorkerMonitor::start() {
  ctx_.sessions->set_retire_observer([this](const net::SessionInfo& i) { retired(i); });
  cpu_us_ = cpu_micros();
  cpu_sampled_ms_ = ctx_.timers->now_ms();
  expected_tick_ms_ = cpu_sampled_ms_ + kTick.count();
  timer_ = ctx_.timers->schedule(kTick, [this] { tick(); });
}

void WorkerMonitor::tick() {
  const int64_t now = ctx_.timers->now_ms();
  // Event-loop lag: how late this timer ran (a busy loop runs its timers late).
  const double lag = static_cast<double>(std::max<int64_t>(0, now - expected_tick_ms_)) / 1000.0;
  lag_sum_s_ += lag;
  lag_max_s_ = std::max(lag_max_s_, lag);
  ++lag_count_;
  // Each figure worked out once a tick: the sessions' totals, the streams' segment counts.
  const Totals t = live_totals();
  sample_process(now, t);
  publish_streams();  // before sample_streams forgets the per-stream figures of streams gone
  sample_streams(now);
  publish_counters(t, hls_segments_);  // at least once a second: a killed worker loses at most one second
  expected_tick_ms_ = now + kTick.count();
  timer_ = ctx_.timers->schedule(kTick, [this] { tick(); });
}

void WorkerMonitor::sample_process(int64_t now, const Totals& t) {
  const uint64_t cpu = cpu_micros();
  if (now > cpu_sampled_ms_) {
    cpu_pct_ = static_cast<double>(cpu - cpu_us_) / 10.0 / static_cast<double>(now - cpu_sampled_ms_);
  }
  cpu_us_ = cpu;
  cpu_sampled_ms_ = now;
  in_rate_.add(now, t.bytes_in);
  out_rate_.add(now, t.bytes_out);
}

void WorkerMonitor::sample_streams(int64_t now) {
  // Updated in place (a key copied only for a new stream); the streams not seen this round go.
  const uint64_t round = ++sample_round_;
  ctx_.streams->for_each([&](media::Stream& s) {
    Rate& r = stream_rates_.try_emplace(s.key_text()).first->second;
    r.round = round;
    r.add(now, s.info().bytes_in);
  });
  std::erase_if(stream_rates_, [round](const auto& e) { return e.second.round != round; });
  hls_segments_ = hls_segments_total();
  // Per-stream totals of streams gone from this worker and no longer watched over HLS are dropped
  // (a stream's series restarts when it comes back, as Prometheus expects of a new series).
  std::erase_if(gone_out_,
                [this](const auto& e) { return !stream_rates_.count(e.first) && !hls_seen_.count(e.first); });
}

void WorkerMonitor::retired(const net::SessionInfo& i) {
  gone_.bytes_in += i.bytes_in;
  gone_.bytes_out += i.bytes_out;
  gone_.dropped += i.dropped_frames;
  if (plays_live(i)) gone_out_[i.stream] += i.bytes_out;
  if (table()) {
    tally_.player_gone(i.id, plays_live(i) ? i.stream : std::string(), i.bytes_out, i.dropped_frames);
  }
}

OwnershipTable* WorkerMonitor::table() const { return locator_ ? locator_->options().table : nullptr; }

void WorkerMonitor::count_streams() {
  ctx_.sessions->for_each([&](net::Session& s) {
    const net::SessionInfo i = s.describe();
    if (plays_live(i)) tally_.player(i.id, i.stream, i.bytes_out, i.dropped_frames);
  });
  ctx_.streams->for_each([&](media::Stream& s) {
    const std::string& key = s.key_text();
    // A relayed copy's bytes in are the owner's publisher's: counted there only.
    tally_.observe(key, StreamTally::StreamBytesIn, s.info().bytes_in, locator_ && locator_->owns(key));
    tally_.observe(key, StreamTally::StreamDrops, s.info().frames_dropped);
    if (const media::HlsStreamState* st = ctx_.streams->hls().find(s.key()))
      tally_.observe(key, StreamTally::StreamSegments, st->stats().segments_produced);
  });
  tally_.end_round();
}

void WorkerMonitor::publish_streams() {
  OwnershipTable* t = table();
  if (!t) return;
  count_streams();
  const pid_t self = ::getpid();
  tally_.publish([&](const std::string& key, const StreamTally::Values& deltas) {
    const auto owner = t->lookup(key);
    if (!owner) return true;  // no live owner: nobody reports the stream, its deltas go
    const auto added = t->stream_totals().add({owner->index, owner->ticket}, deltas, self);
    return added != StreamTotals::Added::Busy;
  });
}

std::optional<StreamTotals::Values> WorkerMonitor::stream_totals(const std::string& key) const {
  OwnershipTable* t = table();
  const auto owner = t ? t->lookup(key) : std::nullopt;
  if (!owner || owner->pid != ::getpid()) return std::nullopt;
  return t->stream_totals().read({owner->index, owner->ticket});
}

WorkerMonitor::Totals WorkerMonitor::live_totals() {
  Totals t = gone_;
  t.bytes_out += hls_bytes_;
  ctx_.sessions->for_each([&](net::Session& s) {
    const net::SessionInfo i = s.describe();
    t.bytes_in += i.bytes_in;
    t.bytes_out += i.bytes_out;
    t.dropped += i.dropped_frames;
  });
  return t;
}

uint64_t WorkerMonitor::hls_segments_total() {
  // The store forgets a stream's state some time after it ended: keep what it had produced.
  const uint64_t round = ++hls_round_;
  ctx_.streams->for_each([&](media::Stream& s) {
    if (const media::HlsStreamState* st = ctx_.streams->hls().find(s.key())) {
      const uint64_t produced = st->stats().segments_produced;
      auto [it, added] = hls_produced_.try_emplace(s.key_text());
      if (!added && produced < it->second.produced)
        hls_produced_gone_ += it->second.produced;  // a new state of the same name started from zero
      it->second = {produced, round};
    }
  });
  uint64_t live = 0;
  std::erase_if(hls_produced_, [&](const auto& e) {
    if (e.second.round == round) {
      live += e.second.produced;
      return false;
    }
    hls_produced_gone_ += e.second.produced;
    return true;
  });
  return hls_produced_gone_ + live;
}

WorkerMonitor::Published WorkerMonitor::publish_counters(const Totals& t, uint64_t hls_segments) {
  using net::SessionProtocol;
  const auto accepted = [this](SessionProtocol p) { return ctx_.sessions->added(p); };
  const record::FileWriter* rec = ctx_.streams->record_writer();
  Published v;
  v.bytes_in = publisher_.publish(Counter::BytesIn, t.bytes_in);
  v.bytes_out = publisher_.publish(Counter::BytesOut, t.bytes_out);
  v.rtmp = publisher_.publish(Counter::AcceptedRtmp, accepted(SessionProtocol::Rtmp));
  v.flv = publisher_.publish(Counter::AcceptedFlv, accepted(SessionProtocol::HttpFlv));
  v.hls = publisher_.publish(Counter::AcceptedHls, hls_requests_);
  v.link = publisher_.publish(Counter::AcceptedLink, accepted(SessionProtocol::WorkerLink));
  v.download = publisher_.publish(Counter::AcceptedDownload, accepted(SessionProtocol::Download));
  v.dropped = publisher_.publish(Counter::DroppedFrames, t.dropped);
  v.hls_segments = publisher_.publish(Counter::HlsSegments, hls_segments);
  v.cpu_us = publisher_.publish(Counter::CpuMicros, cpu_micros());
  v.record_bytes = publisher_.publish(Counter::RecordBytes, rec ? rec->bytes_written() : 0);
  v.record_failures = publisher_.publish(Counter::RecordFailures, rec ? rec->failures() : 0);
  v.download_timeouts = publisher_.publish(Counter::DownloadSendTimeouts,
                                           ctx_.sessions->send_timeouts(SessionProtocol::Download));
  return v;
}

json WorkerMonitor::counters() {
  const Published v = publish_counters(live_totals(), hls_segments_total());
  return {
      {"bytes_in", v.bytes_in},
      {"bytes_out", v.bytes_out},
      {"accepted",
       {{"rtmp", v.rtmp}, {"flv", v.flv}, {"hls", v.hls}, {"worker-link", v.link}, {"download", v.download}}},
      {"dropped_frames", v.dropped},
      {"hls_segments", v.hls_segments},
      {"cpu_seconds", static_cast<double>(v.cpu_us) / 1e6},
      {"record_bytes", v.record_bytes},
      {"record_failures", v.record_failures},
      {"download_send_timeouts", v.download_timeouts}};
}

json WorkerMonitor::all_rows(uint32_t slots) {
  json rows = json::array();
  if (!shared_) {
    json own = counters();
    own["slot"] = ctx_.worker_id;
    rows.push_back(std::move(own));
    return rows;
  }
  counters();
  for (uint32_t s = 0; s < kCounterSlots; ++s) {
    const auto get = [&](Counter c) { return shared_->get(s, c); };
    // A slot beyond the current worker count keeps what its workers counted before a reload
    // that lowered `workers`: totals never go backwards.
    if (s >= slots && get(Counter::BytesIn) == 0 && get(Counter::BytesOut) == 0 &&
        get(Counter::CpuMicros) == 0) {
      continue;
    }
    rows.push_back({{"slot", s},
                    {"bytes_in", get(Counter::BytesIn)},
                    {"bytes_out", get(Counter::BytesOut)},
                    {"accepted",
                     {{"rtmp", get(Counter::AcceptedRtmp)},
                      {"flv", get(Counter::AcceptedFlv)},
                      {"hls", get(Counter::AcceptedHls)},
                      {"worker-link", get(Counter::AcceptedLink)},
                      {"download", get(Counter::AcceptedDownload)}}},
                    {"dropped_frames", get(Counter::DroppedFrames)},
                    {"hls_segments", get(Counter::HlsSegments)},
                    {"cpu_seconds", static_cast<double>(get(Counter::CpuMicros)) / 1e6},
                    {"restarts", get(Counter::Respawns)},
                    {"record_bytes", get(Counter::RecordBytes)},
                    {"record_failures", get(Counter::RecordFailures)},
                    {"download_send_timeouts", get(Counter::DownloadSendTimeouts)}});
  }
  return rows;
}

int64_t WorkerMonitor::server_started_unix_ms() const {
  return shared_ ? shared_->started_unix_ms() : started_unix_ms_;
}

json WorkerMonitor::process() const {
  return {
      {"server_started_ms", server_started_unix_ms()},
      {"cpu_pct", cpu_pct_},
      {"rss_bytes", rss_bytes()},
      {"open_fds", open_fds()},
      {"max_fds", max_fds()},
      {"loop_lag", {{"sum_s", lag_sum_s_}, {"count", lag_count_}, {"max_s", lag_max_s_}}},
      {"bitrate_in_kbps", in_rate_.kbps()},
      {"bitrate_out_kbps", out_rate_.kbps()},
      // The write-merging hold in force (merge_writes: auto follows the load; docs/configuration.md).
      {"merge_hold_ms", ctx_.flusher ? static_cast<double>(ctx_.flusher->reported_hold_us()) / 1000.0 : 0.0},
      {"merge_video_frames", ctx_.flusher ? ctx_.flusher->reported_video_frames() : 0u},
      // What hands player writes to the kernel (send_method; io_uring may have fallen back).
      {"send_method", ctx_.flusher && ctx_.flusher->uses_ring() ? "io_uring" : "sendmsg"}};
}

void WorkerMonitor::hls_sent(const std::string& key, uint64_t bytes) {
  hls_bytes_ += bytes;
  gone_out_[key] += bytes;
  if (table()) tally_.add(key, StreamTotals::BytesOut, bytes);
}

void WorkerMonitor::hls_requested(const std::string& key, std::string_view addr, std::string_view user_agent,
                                  std::chrono::milliseconds target_duration) {
  ++hls_requests_;
  const int64_t window = std::max<int64_t>(kMinHlsWindowMs, 2 * target_duration.count());
  // The viewer's name is built in a buffer kept between requests (no allocation per request), and
  // looked up once.
  // Sized once, then each piece copied in: a player's reloads give the same length, so resize()
  // changes nothing and no append runs.
  std::string& viewer = hls_viewer_scratch_;
  const std::string_view agent = user_agent.substr(0, 256);
  viewer.resize(addr.size() + 1 + agent.size());
  // std::copy, not memcpy: an absent User-Agent is a null, empty view (memcpy from null is UB).
  char* out = std::copy(addr.begin(), addr.end(), viewer.data());
  *out++ = ' ';
  std::copy(agent.begin(), agent.end(), out);
  auto& viewers = hls_seen_[key];
  const int64_t expiry = ctx_.timers->now_ms() + window;
  if (auto it = viewers.find(viewer); it != viewers.end()) {
    it->second = expiry;
  } else if (viewers.size() < 100000) {
    viewers.emplace(viewer, expiry);
  }
}

json WorkerMonitor::hls_viewers() {
  const int64_t now = ctx_.timers->now_ms();
  json out = json::object();
  for (auto it = hls_seen_.begin(); it != hls_seen_.end();) {
    auto& viewers = it->second;
    std::erase_if(viewers, [now](const auto& v) { return v.second < now; });
    if (viewers.empty()) {
      it = hls_seen_.erase(it);
      continue;
    }
    json list = json::array();
    for (const auto& [viewer, expiry] : viewers) list.push_back(viewer);
    out[it->first] = std::move(list);
    ++it;
  }
  return out;
}

uint64_t WorkerMonitor::gone_bytes_out(const std::string& key) const {
  auto it = gone_out_.find(key);
  return it == gone_out_.end() ? 0 : it->second;
}

uint64_t WorkerMonitor::hls_segments(const std::string& key) const {
  auto it = hls_produced_.find(key);
  return it == hls_produced_.end() ? 0 : it->second.produced;
}

double WorkerMonitor::bitrate_in_kbps(const std::string& key) const {
  auto it = stream_rates_.find(key);
  return it == stream_rates_.end() ? 0 : it->second.kbps();
}

int64_t WorkerMonitor::unix_ms(int64_t timer_ms) const {
  return wall_ms() - (ctx_.timers->now_ms() - timer_ms);
}

}  // namespace rill::workers
