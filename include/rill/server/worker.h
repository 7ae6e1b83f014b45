#pragma once
// Worker: everything one worker process serves, on one libevent event_base and one thread.
// The process module (process/) forks the worker, installs its signal handling and runs the
// loop; this class owns the listeners and the sessions.
#include <spdlog/logger.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "rill/config/config.h"
#include "rill/net/acceptor.h"

struct event_base;

namespace rill::workers {
class OwnershipTable;
class ServerCounters;
}  // namespace rill::workers

namespace rill::server {

struct WorkerContext {
  int id = 0;          // 0..workers-1, stable across respawns of the same slot
  int generation = 0;  // bumped on every successful reload
  std::shared_ptr<const config::Config> config;
  // This slot's listening sockets, owned by the master: bound, listening, SO_REUSEPORT (each
  // worker slot has its own socket per address). RTMP, HTTP and the API, plain or TLS.
  std::vector<net::ListenSocket> listeners;
  // Counters that outlive a worker process (workers/server_counters.h); null: process-local.
  workers::ServerCounters* counters = nullptr;
  std::shared_ptr<spdlog::logger> log;
  std::shared_ptr<spdlog::logger> access_log;  // may be null: no access log
  // Across workers: the stream ownership table the master shares with every worker (null: no
  // table, everything stays local) and the number of worker slots. The relay socket of slot N
  // is config->runtime_dir/worker-N.sock (workers/worker_endpoint.h).
  workers::OwnershipTable* ownership = nullptr;
  uint32_t workers = 1;
};

class Worker {
 public:
  Worker(event_base* base, WorkerContext ctx);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Registers the listeners on the event base and starts accepting.
  void start();
  // An old generation after a reload (server/worker_retirement.h): stop accepting clients, keep
  // every session that carries live media as long as it does, close the others once idle for
  // idle_limit; on_done when no session is left.
  void retire(std::chrono::milliseconds idle_limit, std::function<void()> on_done);
  // Graceful stop (SIGQUIT): stop accepting, let sessions end
  // (players are ended at the stream's natural end or after `drain_timeout`), then call on_drained.
  void drain(std::function<void()> on_drained);
  // Fast stop (SIGTERM): close every session now; on_stopped once the recording files this
  // closed are closed on disk and their on_record_done calls answered, or after `reports_for` at
  // the latest (at once when the worker records nothing). The loop must run until then.
  void stop_now(std::chrono::milliseconds reports_for, std::function<void()> on_stopped);
  size_t session_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill::server
