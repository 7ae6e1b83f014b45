#pragma once
// The master process: loads the configuration, owns the listening sockets and the pid file,
// forks and supervises the workers, and turns signals into reload / stop / log reopen / upgrade.
//
// Process design
// ==============
//
// rill runs as one master process and N worker processes (N = workers, `auto` = online cores).
// It stays in the foreground (no daemonizing): systemd (Type=notify), a container runtime or a
// shell supervises the master; the master supervises the workers.
//
//   master  "rill: master -c /etc/rill/rill.yaml"   config, sockets, pid file, supervision
//    ├─ worker 0  "rill: worker 0"                 one libevent loop: RTMP, HTTP, relay
//    └─ worker N-1
//
// Startup (master)
//   1. Block SIGHUP/SIGTERM/SIGINT/SIGQUIT/SIGUSR1/SIGCHLD for good (they are taken
//      synchronously with sigtimedwait(), see "Master loop"); ignore SIGPIPE.
//   2. Load and validate the config (-c FILE, or the embedded default). Invalid: print
//      "FILE:LINE:COL: message" to stderr and exit 1.
//   3. Open the log (file or stderr). Resolve `user` (must exist; switching needs root).
//      Create the log files and runtime_dir and chown them to that user so that workers can
//      reopen them after dropping privileges.
//   4. Write the pid file, held with flock() for the master's life: refuse to start if another
//      live master holds it (the lock, or a live "rill: master" process named in it); a stale
//      file left by a crash is taken over.
//   5. Bind the listeners (see listeners.h): for EACH worker slot and EACH listen address one
//      socket with SO_REUSEADDR + SO_REUSEPORT (+ IPV6_V6ONLY for v6), non-blocking,
//      close-on-exec, backlog 4096 (net.core.somaxconn is raised to 4096 where writable). A
//      new address is first probed with a bind without SO_REUSEPORT so that a port already in
//      use, even by another rill of the same user, fails loudly instead of being shared.
//      Why the master binds, and per slot: workers drop privileges, so they could not bind
//      ports < 1024 themselves; the master keeps every socket, so a respawned worker inherits
//      its slot's socket (connections queued while it was down are served, not refused) and
//      a reload reuses the sockets of unchanged addresses (no refused connection during a
//      reload); one socket per slot lets the kernel's SO_REUSEPORT hashing spread
//      connections over the workers with no accept lock and no thundering herd.
//   6. Map the stream ownership table (workers/ownership_table.h: shared memory, a memfd
//      mapped MAP_SHARED) so that every worker inherits it; it lives as long as the master,
//      across reloads and respawns, and passes to the new master of a binary upgrade. Which worker publishes
//      which stream is claimed there, lock-free, by the workers themselves (docs/workers.md); the master only
//      frees the entries of a worker it reaps (any exit, any generation), so that a dead worker's streams can
//      be published again at once.
//   7. Fork the workers (slot 0..N-1), then sd_notify READY=1 + MAINPID, title "rill: master".
//
// Worker: the comment at the top of src/process/worker_process.cpp (what it does right after fork).
//
// Master loop
//   All master signals are blocked and consumed with sigtimedwait(); its timeout is the next
//   timer (a delayed respawn, a SIGKILL deadline). No handler runs asynchronously, so there is
//   no async-signal-safety problem, no EINTR in the middle of the master's work, and a
//   SIGCHLD arriving during fork() simply stays pending until the loop picks it up.
//   SIGCHLD  reap with waitpid(-1, WNOHANG) until none is left; log the exit status or signal.
//            A current-generation worker that died is respawned into the same slot (same
//            sockets) unless the master is stopping. Back-off: a slot whose worker died less
//            than 1 s after its start more than 3 times in a row is respawned after 100 ms,
//            doubling up to 10 s; the count is reset once a worker of that slot lived > 10 s.
//   SIGHUP   reload: sd_notify RELOADING=1; load the config again from the same -c path (the
//            embedded default without -c). Everything that can fail is done before anything
//            changes: parse/validate, resolve the user, open the new log file, bind new
//            listen addresses. On any error: log "reload failed, keeping the running
//            configuration: ..." and change nothing. On success: close the sockets of removed
//            addresses (and of slots beyond the new worker count), fork a full new generation
//            (generation = reload count) with the new config, send SIGUSR2 to every worker of
//            the old generation (they retire: stop accepting, keep the sessions that carry live
//            media while they do, close idle ones after shutdown_timeout, exit when none is
//            left; no SIGKILL deadline), then READY=1. Unchanged addresses keep their
//            sockets, so old and new generation share them and no connection is refused.
//   SIGTERM/SIGINT  fast stop: STOPPING=1, SIGTERM to every worker, SIGKILL to those still
//            alive after shutdown_timeout; then remove the pid file and exit 0.
//   SIGQUIT  graceful stop: STOPPING=1, SIGQUIT to every worker (each drains for at most
//            shutdown_timeout), SIGKILL to those still alive 1 s after that; remove the pid
//            file, exit 0. A SIGTERM during a graceful stop turns it into a fast stop.
//   SIGUSR1  reopen: create the log files again (owned by `user`), reopen the master's log,
//            forward SIGUSR1 to every worker, which reopens its own.
//   SIGUSR2  binary upgrade: exec the binary at its path with the listening sockets and the
//            shared areas; SIGWINCH from that new master says it is ready, and this master's
//            workers retire as in a reload (binary_upgrade.cpp has the steps and the failures).
//
// Never a zombie: every child is reaped by the loop, including old-generation workers. No fd
// leak: the master holds exactly the listening sockets, the pid file, its log file and the
// master pipe; a worker closes everything of the master's but its own slot's sockets and the
// pipe's read end.
#include <memory>
#include <optional>
#include <string>

#include "rill/config/config.h"

namespace rill::process {

struct MasterOptions {
  std::optional<std::string> config_path;  // -c (made absolute); nullopt: the embedded default
  std::optional<std::string> pid_file;     // -p: overrides pid_file of every loaded config
  std::string binary;  // the path this binary was started from: what a binary upgrade execs
};

// Load the configuration as the master does (the file, or the embedded default when there is
// no -c) and apply the -p override. Throws config::ConfigError.
config::Config load_master_config(const MasterOptions& opts);

class Master {
 public:
  explicit Master(MasterOptions opts);
  ~Master();
  Master(const Master&) = delete;
  Master& operator=(const Master&) = delete;

  // Runs until stopped by SIGTERM/SIGINT/SIGQUIT. Returns the process exit code: 0 after a
  // clean stop, 1 when startup failed (bad config, pid file in use, cannot listen, ...; the
  // reason is logged and printed to stderr). Must be called from the main thread of a
  // single-threaded process; it forks.
  int run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill::process
