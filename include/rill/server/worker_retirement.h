#pragma once
// WorkerRetirement: how an old-generation worker lives on after a reload (docs/operations.md,
// "Reload"). It has stopped accepting clients; it keeps every session that carries live media
// — publishers, players of a stream that has a publisher (local, or fed by a worker link), and
// worker-link senders feeding other workers — for as long as it does; and a download of a
// recording (server/recording_download.h) until it ends by itself: sent whole, or closed by its
// send timeout once its client stopped reading (server/file_range_body.h). Its bytes out are no
// sign of life: what the kernel took may stand still for many seconds while a slow client reads
// what the kernel holds (18.7 s measured for a 64 KiB/s reader on loopback). A session that carries
// nothing (a handshake, a player whose stream lost its publisher, a query) is closed once it has
// been idle for `idle_limit` (shutdown_timeout). When no session is left, `on_done` runs and
// the worker exits.
//
// Unlike a graceful stop (drain), there is no deadline for live sessions: a reload must not cut
// a publisher or its players. A stop (SIGTERM, SIGQUIT) still ends a retiring worker.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>

#include "rill/net/worker_core.h"

namespace rill::server {

class WorkerRetirement {
 public:
  WorkerRetirement(net::WorkerCore& ctx, std::chrono::milliseconds idle_limit, std::function<void()> on_done);
  ~WorkerRetirement();
  WorkerRetirement(const WorkerRetirement&) = delete;
  WorkerRetirement& operator=(const WorkerRetirement&) = delete;

  // Starts the periodic check (every 250 ms).
  void start();
  // Live sessions counted at the last check (for the log).
  size_t live_sessions() const { return live_; }

 private:
  void check();
  bool carries_media(const net::SessionInfo& info) const;

  net::WorkerCore& ctx_;
  std::chrono::milliseconds idle_limit_;
  std::function<void()> on_done_;
  std::unordered_map<uint64_t, int64_t> idle_since_;  // session id -> first seen idle (ms)
  std::optional<TimerId> timer_;
  size_t live_ = 0;
};

}  // namespace rill::server
