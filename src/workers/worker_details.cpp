#include "rill/workers/worker_details.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "rill/core/version.h"
#include "rill/media/hls_store.h"
#include "rill/protocol/stream_summary.h"
#include "rill/workers/record_view.h"
#include "rill/workers/stream_locator.h"
#include "rill/workers/worker_monitor.h"

namespace rill::workers {

namespace {

using nlohmann::json;

std::string client_proto(const net::SessionInfo& i) {
  if (i.protocol == "http-flv") return "flv";
  return i.protocol;
}

bool is_client(const net::SessionInfo& i) {
  return i.kind == net::SessionKind::Publisher || i.kind == net::SessionKind::Player ||
         i.kind == net::SessionKind::Download;
}

// The API lists a download as a player (of the recording) whose proto is "download" (docs/api.md).
const char* client_kind(const net::SessionInfo& i) {
  return net::session_kind_name(i.kind == net::SessionKind::Download ? net::SessionKind::Player : i.kind);
}

json client_json(const net::SessionInfo& i, const WorkerMonitor* mon) {
  const auto slash = i.stream.find('/');
  return {{"id", i.id},
          {"kind", client_kind(i)},
          {"proto", client_proto(i)},
          {"addr", i.peer},
          {"app", slash == std::string::npos ? "" : i.stream.substr(0, slash)},
          {"name", slash == std::string::npos ? i.stream : i.stream.substr(slash + 1)},
          {"since_ms", mon ? mon->unix_ms(i.since_ms) : i.since_ms},
          {"bytes_in", i.bytes_in},
          {"bytes_out", i.bytes_out},
          {"dropped_frames", i.dropped_frames},
          {"queue_bytes", i.queued_bytes}};
}

json video_json(const media::Stream& s) {
  const media::FramePtr& h = s.gop_cache().video_header();
  if (!h || !h->payload) return nullptr;
  const auto v = protocol::summarize_video_header({h->payload.data(), h->payload.size()});
  if (!v) return nullptr;
  // Frame rate from the GOP cache: video frames over the time they span.
  uint32_t first = 0, last = 0;
  size_t frames = 0;
  for (const media::FramePtr& f : s.gop_cache().gop()) {
    if (f->type != media::MediaType::Video || f->sequence_header || !media::GopCache::is_track0(*f)) continue;
    if (frames++ == 0) first = f->timestamp;
    last = f->timestamp;
  }
  const double fps = frames > 1 && last > first ? (frames - 1) * 1000.0 / (last - first) : 0.0;
  return {{"codec", v->codec},     {"width", v->width},
          {"height", v->height},   {"fps", std::round(fps * 100) / 100},
          {"profile", v->profile}, {"level", v->level}};
}

json audio_json(const media::Stream& s) {
  const media::FramePtr& h = s.gop_cache().audio_header();
  if (!h || !h->payload) return nullptr;
  const auto a = protocol::summarize_audio_header({h->payload.data(), h->payload.size()});
  if (!a) return nullptr;
  return {{"codec", a->codec},
          {"sample_rate", a->sample_rate},
          {"channels", a->channels},
          {"profile", a->profile}};
}

json hls_json(const net::WorkerCore& ctx, const media::Stream& s, const WorkerMonitor* mon) {
  const media::HlsStreamState* st = ctx.streams->hls().find(s.key());
  json h = {{"enabled", s.app_config().hls.enabled},
            {"media_sequence", 0},
            {"segments", 0},
            {"segments_total", mon ? mon->hls_segments(s.key_text()) : 0}};
  if (st) {
    const media::HlsStreamStats hs = st->stats();
    h["media_sequence"] = hs.media_sequence;
    h["segments"] = st->playlist().state().segments.size();
  }
  return h;
}

struct PerStream {
  json publisher = nullptr;
  uint64_t rtmp = 0, flv = 0, bytes_out = 0, dropped = 0;
};

// Where a stream's media comes from, as the API names it.
const char* source_of(media::PublishOrigin o) {
  switch (o) {
    case media::PublishOrigin::EdgePull:
      return "edge-pull";
    case media::PublishOrigin::Pull:
      return "pull";
    default:
      return "publish";  // Ingest; a WorkerLink copy is not the owner's row
  }
}

json stream_details(const net::WorkerCore& ctx, const StreamLocator* locator, const WorkerMonitor* mon,
                    std::map<std::string, PerStream>& per) {
  json list = json::array();
  ctx.streams->for_each([&](media::Stream& s) {
    const std::string& key = s.key_text();
    PerStream& p = per[key];
    const bool owner = !locator || locator->owns(key);
    list.push_back({{"key", key},
                    {"app", s.app()},
                    {"name", s.name()},
                    {"owner", owner},
                    {"live", s.has_publisher()},
                    {"publisher", p.publisher},
                    {"video", video_json(s)},
                    {"audio", audio_json(s)},
                    {"bitrate_in_kbps", mon ? mon->bitrate_in_kbps(key) : 0.0},
                    {"bytes_in", s.info().bytes_in},
                    {"bytes_out", p.bytes_out + (mon ? mon->gone_bytes_out(key) : 0)},
                    {"dropped_frames", p.dropped + s.info().frames_dropped},
                    {"players", {{"rtmp", p.rtmp}, {"flv", p.flv}}},
                    {"hls", hls_json(ctx, s, mon)},
                    {"record", record_json(s)},
                    {"source", source_of(s.publish_origin())}});
    // The owner reports the stream's totals over every worker (published first: add_details).
    if (const auto t = owner && mon ? mon->stream_totals(key) : std::nullopt) {
      list.back()["totals"] = {{"bytes_in", (*t)[StreamTotals::BytesIn]},
                               {"bytes_out", (*t)[StreamTotals::BytesOut]},
                               {"dropped_frames", (*t)[StreamTotals::DroppedFrames]},
                               {"hls_segments", (*t)[StreamTotals::HlsSegments]}};
    }
  });
  return list;
}

}  // namespace

namespace {

json relay_rows(const net::WorkerCore& ctx, RelayControl* relays, const WorkerMonitor* mon) {
  json rows = json::array();
  if (!relays) return rows;
  const int64_t now = ctx.timers->now_ms();
  for (const RelayInfo& r : relays->relays()) {
    const int64_t since =
        std::min(r.since_ms, now);  // the worker's clock; Unix time when a monitor converts it
    rows.push_back({{"id", r.id},
                    {"kind", to_string(r.kind)},
                    {"app", r.app},
                    {"name", r.name},
                    {"url", r.url},
                    {"state", to_string(r.state)},
                    {"since_ms", mon ? mon->unix_ms(since) : since - now},
                    {"bytes", r.bytes},
                    {"reconnects", r.reconnects},
                    {"worker", ctx.worker_id}});
  }
  return rows;
}

}  // namespace

void WorkerDetails::add_details(json& stats) {
  net::WorkerCore& ctx = core_;
  WorkerMonitor* mon = monitor_;
  if (mon) mon->publish_streams();  // publish before report: the owner's totals include ours
  std::map<std::string, PerStream> per;
  json clients = json::array();
  size_t left_out = 0, downloads = 0;
  ctx.sessions->for_each([&](net::Session& s) {
    const net::SessionInfo i = s.describe();
    if (!is_client(i)) return;
    PerStream& p = per[i.stream];
    if (i.kind == net::SessionKind::Publisher) {
      p.publisher = {{"client_id", i.id},
                     {"proto", client_proto(i)},
                     {"addr", i.peer},
                     {"since_ms", mon ? mon->unix_ms(i.since_ms) : i.since_ms}};
    } else if (i.kind == net::SessionKind::Download) {  // of a recording: not a live player
      ++downloads;
    } else {
      (i.protocol == "http-flv" ? p.flv : p.rtmp) += 1;
      p.bytes_out += i.bytes_out;
      p.dropped += i.dropped_frames;
    }
    if (clients.size() < kMaxClientsReported) {
      clients.push_back(client_json(i, mon));
    } else {
      ++left_out;
    }
  });
  stats["clients"] = std::move(clients);
  stats["clients_truncated"] = left_out;
  stats["downloads"] = downloads;
  stats["stream_details"] = stream_details(ctx, locator_, mon, per);
  if (stream_extras_) {
    for (json& row : stats["stream_details"])
      stream_extras_(row.value("app", ""), row.value("name", ""), row);
  }
  if (worker_extras_) worker_extras_(stats);
  stats["relays"] = relay_rows(ctx, relays_, mon);
  stats["version"] = std::string(core::version());
  stats["master_pid"] = static_cast<int>(::getppid());
  if (mon) {
    stats["hls_viewers"] = mon->hls_viewers();
    stats["counters"] = mon->counters();
    stats["process"] = mon->process();
  }
}

json WorkerDetails::add_relay(const protocol::LinkRelayAddRequest& r) {
  if (!relays_) return {{"created", 0}, {"error", "this server has no cluster module"}};
  const std::string error = relays_->add_relay(r.id, r.kind, r.app, r.name, r.url);
  if (!error.empty()) return {{"created", 0}, {"error", error}};
  core_.log->info("api: {} relay {} of {}/{} to {} created", r.kind, r.id, r.app, r.name, r.url);
  return {{"created", 1}};
}

json WorkerDetails::remove_relay(const std::string& id) {
  if (!relays_ || !relays_->remove_relay(id)) return {{"closed", 0}};
  core_.log->info("api: relay {} removed", id);
  return {{"closed", 1}};
}

json WorkerDetails::kick_client(uint64_t id) {
  net::Session* found = nullptr;
  core_.sessions->for_each([&](net::Session& s) {
    if (s.id() == id) found = &s;
  });
  if (!found) return {{"closed", 0}};
  core_.log->info("api: closing client {} on request", id);
  found->kick("closed by the API");  // closing retires it: never inside for_each
  return {{"closed", 1}};
}

json WorkerDetails::drop_publisher(const std::string& key) {
  net::Session* found = nullptr;
  core_.sessions->for_each([&](net::Session& s) {
    if (found) return;
    const net::SessionInfo i = s.describe();
    if (i.kind == net::SessionKind::Publisher && i.stream == key) found = &s;
  });
  if (!found) return {{"closed", 0}};
  core_.log->info("api: dropping the publisher of {} (client {}) on request", key, found->id());
  found->kick("publisher dropped by the API");
  return {{"closed", 1}};
}

json WorkerDetails::control_record(const media::StreamKey& key, bool start) {
  media::Stream* s = core_.streams->find(key);
  // The owner's stream has a publisher here; a worker link's copy records nothing.
  if (!s || !s->has_publisher() || s->publish_origin() == media::PublishOrigin::WorkerLink)
    return {{"found", 0}};
  media::Recorder* r = recorder_of(*s);
  if (!r) return {{"found", 1}, {"records", 0}};
  core_.log->info("api: {} recording of {}", start ? "starting" : "stopping", key.str());
  r->control(start);
  return {{"found", 1}, {"records", 1}, {"record", record_json(*s)}};
}

}  // namespace rill::workers
