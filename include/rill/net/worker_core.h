#pragma once
// What every session of a worker needs, passed explicitly (no singletons).
#include <spdlog/logger.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "rill/config/config.h"
#include "rill/core/event_timer_queue.h"
#include "rill/media/output_queue.h"
#include "rill/media/stream.h"
#include "rill/net/flush_scheduler.h"

struct event_base;

namespace rill::protocol {
class HandshakeMac;
}

namespace rill::net {

class SessionSet;
class Resolver;

// A subscriber's output queue bounds, from its app's `queue` settings (defaults without an app).
inline media::QueueLimits queue_limits_for(const config::AppConfig* app) {
  media::QueueLimits l;
  if (app) {
    l.soft_bytes = app->queue_soft_bytes;
    l.hard_bytes = app->queue_hard_bytes;
    l.soft_duration_ms = static_cast<uint32_t>(app->queue_soft_duration.count());
    l.hard_duration_ms = static_cast<uint32_t>(app->queue_hard_duration.count());
  }
  return l;
}

// The core of one worker, which every session and service of the worker shares: its event base,
// clock and timers, write flushing, streams, sessions, configuration and logs. Nothing of the
// layers above: server::Worker hands each service the others it uses through its constructor.
struct WorkerCore {
  event_base* base = nullptr;
  int worker_id = 0;
  std::shared_ptr<const config::Config> config;
  media::StreamRegistry* streams = nullptr;
  FlushScheduler* flusher = nullptr;
  EventTimerQueue* timers = nullptr;
  SessionSet* sessions = nullptr;
  // Host names of outward connections (relays, callbacks), resolved without blocking; one per
  // worker (null: numeric addresses only, e.g. unit tests).
  Resolver* resolver = nullptr;
  // Where publishers' messages and their frames are allocated (null: the heap).
  BufferPool* frame_pool = nullptr;
  // The RTMP complex handshake's HMAC, set up once for the worker's sessions
  // (protocol/handshake_mac.h; null: each handshake sets up its own, e.g. unit tests).
  protocol::HandshakeMac* handshake_mac = nullptr;
  std::shared_ptr<spdlog::logger> log;
  std::shared_ptr<spdlog::logger> access_log;  // may be null
};

// What a session speaks; fixed for its life. SessionSet counts the live sessions of each, so
// that a limit applies to one protocol (rtmp.max_connections counts RTMP sessions only).
enum class SessionProtocol : uint8_t { Other, Rtmp, HttpFlv, WorkerLink, Download };
inline constexpr size_t kSessionProtocols = 5;
// "other", "rtmp", "http-flv", "worker-link", "download"
const char* session_protocol_name(SessionProtocol p);

// What a session does now. A Download sends a recording's bytes (server/recording_download.h):
// a client of the recording's stream, but not one of its live players.
enum class SessionKind : uint8_t { Other, Connecting, Publisher, Player, WorkerLink, Download };
// "other", "connecting", "publisher", "player", "worker-link", "download"
const char* session_kind_name(SessionKind k);

// A session described for statistics: a plain value, so callers need no dynamic_cast.
struct SessionInfo {
  uint64_t id = 0;  // unique across the server's workers (SessionSet::next_id)
  SessionKind kind = SessionKind::Other;
  std::string protocol;  // "rtmp", "rtmps", "http-flv", "worker-link", "download"
  std::string peer;      // "1.2.3.4:5678", "unix"
  std::string stream;    // "app/name" it publishes, plays or relays; empty when none
  int64_t since_ms = 0;  // start, on the worker's TimerQueue clock
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  size_t queued_bytes = 0;  // waiting for the socket
  uint64_t frames_out = 0;  // media frames queued to the peer
  uint64_t dropped_frames = 0;
};

// A connection-level session owned by the worker's SessionSet.
class Session {
 public:
  explicit Session(SessionProtocol protocol = SessionProtocol::Other) : protocol_(protocol) {}
  virtual ~Session() = default;
  // Close now (fast stop) with a reason for the log.
  virtual void close(const char* reason) = 0;
  // Graceful stop: stop taking new work; close when done (publishers: now; players: now).
  virtual void drain() { close("worker shutting down"); }
  // Closed by an operator (the API): at once; a protocol may tell its peer why first.
  virtual void kick(const char* reason) { close(reason); }
  // What the session is now. The default knows only the protocol.
  virtual SessionInfo describe() const;
  SessionProtocol protocol() const { return protocol_; }
  // Given by SessionSet::add unless set before (an HTTP session keeps its request's id).
  uint64_t id() const { return id_; }
  void set_id(uint64_t id) { id_ = id; }

 private:
  const SessionProtocol protocol_;
  uint64_t id_ = 0;
};

// The sessions of one worker: ownership, counts per protocol, and deferred destruction (a
// session closing inside its own callback is destroyed after the callback).
class SessionSet {
 public:
  // Built in the worker process (after the fork): the pid it reads is the worker's.
  explicit SessionSet(EventTimerQueue& timers);
  ~SessionSet();
  Session* add(std::unique_ptr<Session> s);
  // A new id, unique across the workers of this server: the worker's pid in the high 32 bits, a
  // per-process sequence in the low ones (the API and the admission gate name sessions by it).
  uint64_t next_id();
  // Destroys the session after the current callback returns.
  void retire(Session* s);
  size_t size() const { return live_set_.size(); }
  // Live (not retired) sessions of one protocol.
  size_t count(SessionProtocol p) const { return counts_[static_cast<size_t>(p)]; }
  // Sessions of one protocol ever added (a counter for the API and /metrics).
  uint64_t added(SessionProtocol p) const { return added_[static_cast<size_t>(p)]; }
  // Sessions of one protocol closed because their peer took no byte within their send timeout
  // (a recording download's http.timeout: server/file_range_body.h), ever (for /metrics).
  void note_send_timeout(SessionProtocol p) { ++send_timeouts_[static_cast<size_t>(p)]; }
  uint64_t send_timeouts(SessionProtocol p) const { return send_timeouts_[static_cast<size_t>(p)]; }
  // Told once per session as it is retired, with its last description (its byte totals go on
  // counting in the control plane's counters after the session is gone).
  void set_retire_observer(std::function<void(const SessionInfo&)> f) { on_retired_ = std::move(f); }
  template <typename F>
  void for_each(F&& f) {
    for (auto* s : live_set_) f(*s);
  }
  void close_all(const char* reason);
  void drain_all();
  // Called with each session as it is retired (still alive): the callbacks of docs/security.md
  // (publish_done, play_done) and the per-address connection counts follow sessions through it.
  void add_retire_observer(std::function<void(Session&)> f) { retire_observers_.push_back(std::move(f)); }
  // The live session with this id, or null.
  Session* find(uint64_t id) const;

 private:
  void reap();
  EventTimerQueue& timers_;
  std::unordered_set<Session*> live_set_;  // owned
  std::vector<Session*> retired_;
  std::array<size_t, kSessionProtocols> counts_{};
  std::array<uint64_t, kSessionProtocols> added_{};
  std::array<uint64_t, kSessionProtocols> send_timeouts_{};
  std::function<void(const SessionInfo&)> on_retired_;
  bool reap_scheduled_ = false;
  uint32_t id_seq_ = 0;
  uint64_t id_pid_;  // the pid, shifted into place once (HTTP asks an id per request)
  std::vector<std::function<void(Session&)>> retire_observers_;
};

}  // namespace rill::net
