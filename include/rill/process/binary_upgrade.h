#pragma once
// Binary upgrade (SIGUSR2, `rill -s upgrade`): the master execs the binary at its path again
// and hands it the listening sockets and the shared areas; the full design is the comment at the
// top of src/process/binary_upgrade.cpp and docs/workers.md ("Binary upgrade").
//
// These are the process-level steps; the state machine (waiting for the new master, the pid
// file's move, handing over or keeping on serving) is upgrade_coordinator.h's.
#include <signal.h>
#include <spdlog/logger.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rill/process/upgrade_handoff.h"
#include "rill/workers/ownership_table.h"
#include "rill/workers/server_counters.h"

namespace rill::process {

// How long the old master waits for the new one to say it is ready before it kills it and goes
// on serving.
inline constexpr std::chrono::seconds kUpgradeReadyTimeout{30};

// `rill -s upgrade --force` sends SIGUSR2 with this value (sigqueue); the new master's "ready"
// (SIGWINCH to the old master) carries it when it restarted instead (fresh shared areas: the old
// workers stop at once instead of retiring).
inline constexpr int kUpgradeForceValue = 1;

// `rill -s upgrade` waits for the outcome: the master answers the pid that sent SIGUSR2 with
// sigqueue() this signal, value 0 (the new master is ready) or 1 (the upgrade failed or was
// ignored; the log says why).
int upgrade_outcome_signal();  // SIGRTMIN + 1 (not a constant in glibc)

// Tells `requester` (0: nobody) the outcome of its upgrade.
void report_upgrade_outcome(pid_t requester, bool upgraded);

// The path this process was started from, resolved at start (/proc/self/exe, else argv0 made
// absolute): the path, not the inode, so that an upgrade execs the file that is at that path now
// (a package upgrade replaces the file; /proc/self/exe would then name the deleted one).
std::string own_executable_path(const char* argv0);

// The old master: forks and, in the child, clears close-on-exec on the handed-over descriptors,
// adds RILL_UPGRADE (upgrade_handoff.h) to the environment and execs `binary` with `args`
// (args[0] included). Returns the new master's pid. Throws std::runtime_error naming the binary
// when it is not an executable file or fork fails; an exec that fails in the child ends it with
// code 127 (the master sees it exit before it was ready).
pid_t launch_new_master(const std::string& binary, const std::vector<std::string>& args,
                        const UpgradeHandoff& handoff);

// The new master's start: the handoff from RILL_UPGRADE (removed from the environment: the
// workers and a later upgrade must not see it); nullopt when the variable is not set (an ordinary
// start). `restart`: forced across worker link versions, so the shared areas are not taken over.
// Throws std::runtime_error when the handoff is malformed or the link versions differ without
// --force ("binary upgrade refused: the running rill 0.1.0 speaks worker link version 1, ...").
struct UpgradeStart {
  UpgradeHandoff handoff;
  bool restart = false;
};
std::optional<UpgradeStart> take_upgrade_start(spdlog::logger& log);

// The ownership table (with the HLS sequence memo and stream totals) and the server counters of
// a new master: those the upgrade handed over, or new ones (an ordinary start, a restart; the
// handed-over descriptors are closed then). Throws std::runtime_error.
void map_shared_areas(const UpgradeStart* upgrade, std::unique_ptr<workers::OwnershipTable>& ownership,
                      std::unique_ptr<workers::ServerCounters>& counters);

// The new master, once its workers are started: tells the old master (SIGWINCH) to hand over;
// `restart` when it did not take the shared areas over (a forced upgrade across link versions).
bool tell_old_master_ready(pid_t old_master, bool restart);

}  // namespace rill::process
