#pragma once
// What runs in a forked worker process: from the moment after fork() until _exit().
#include <sys/types.h>

#include <memory>
#include <optional>
#include <vector>

#include "rill/config/config.h"
#include "rill/net/acceptor.h"
#include "rill/process/privileges.h"

namespace rill::workers {
class OwnershipTable;
class ServerCounters;
}

namespace rill::process {

struct WorkerProcessParams {
  int slot = 0;        // worker id, 0..N-1
  int generation = 0;  // reload count
  std::shared_ptr<const config::Config> config;
  std::vector<net::ListenSocket> listeners;  // this slot's listening sockets (inherited from the master)
  workers::ServerCounters* counters = nullptr;  // the master's shared counters (inherited mapping)
  int master_pipe_fd = -1;  // read end of a pipe whose write end only the master holds
  pid_t master_pid = 0;
  std::optional<UserIds> user;  // switch to this user after the log files are open
  workers::OwnershipTable* ownership = nullptr;  // the master's shared table (inherited mapping)
  uint32_t workers = 1;                          // worker slots of this generation
};

// Exit codes of a worker process.
inline constexpr int kWorkerExitOk = 0;
inline constexpr int kWorkerExitError = 1;  // startup failure (logged)

// Runs the worker and never returns (_exit). The caller (the master, in the child right after
// fork) must already have closed the master's own descriptors (other slots' sockets, the pid
// file, the master's log files). Signals in master_signal_set() are expected to be blocked on
// entry; they are unblocked once the worker's own handlers are installed, so a signal sent
// right after fork is delivered, not lost.
//
// Sequence: PR_SET_PDEATHSIG(SIGTERM) + getppid() check; signal dispositions reset; title
// "rill: worker N"; loggers opened; privileges dropped; event_base + server::Worker started;
// signal events installed (SIGTERM/SIGINT: stop_now, SIGQUIT: drain with a shutdown_timeout
// hard limit, SIGUSR1: reopen logs, SIGHUP/SIGPIPE ignored); master pipe watched (EOF: the
// master is gone, stop now); loop.
[[noreturn]] void run_worker_process(WorkerProcessParams params);

}  // namespace rill::process
