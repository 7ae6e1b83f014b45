#pragma once
// UpgradeCoordinator: the old master's side of a binary upgrade (binary_upgrade.h), one attempt
// at a time: SIGUSR2 starts it (the pid file moves to <pid file>.oldbin, the new binary is
// exec'ed with the handoff), then either the new master says it is ready (SIGWINCH: the master
// hands over and retires its workers) or it fails (exits, or is killed after
// kUpgradeReadyTimeout): the pid file moves back and the master serves on, so the upgrade can be
// retried.
#include <spdlog/logger.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "rill/process/pid_file.h"
#include "rill/process/upgrade_handoff.h"

namespace rill::process {

class UpgradeCoordinator {
 public:
  using Clock = std::chrono::steady_clock;

  pid_t new_master() const { return new_master_; }      // starting, not ready yet; 0: none
  bool handed_over() const { return successor_ != 0; }  // the rest of this master's life: retiring
  std::optional<Clock::time_point> deadline() const { return deadline_; }

  // SIGUSR2. Logs what it does; when the new master cannot be started, logs why and leaves
  // everything as it was. `requester` (0: none) is told the outcome (report_upgrade_outcome).
  void start(const std::string& binary, const std::vector<std::string>& args, const UpgradeHandoff& handoff,
             PidFile* pid_file, pid_t requester, spdlog::logger& log);

  // SIGWINCH from `from`. True when it is the new master saying it is ready: it becomes the
  // successor (MAINPID for systemd); the caller retires its workers (`*restart`: stops them).
  bool ready(pid_t from, bool restart, spdlog::logger& log);

  enum class Exit { NotOurs, Failed, SuccessorHandedOver, ServiceStopped };
  // A reaped child: the new master that exited before it was ready (Failed: the pid file is
  // back, logged); the successor, which exits either after it handed over to a later upgrade
  // itself (SuccessorHandedOver: the pid file names a live master, the service goes on) or
  // because the service stopped (ServiceStopped: the pid file is gone; this master stops its
  // retiring workers too); or NotOurs. Without a pid file a successor's exit is taken as a
  // hand-over: the retiring workers finish on their own.
  Exit reaped(pid_t pid, int status, PidFile* pid_file, spdlog::logger& log);

  // The master's timer: kills a new master not ready by the deadline (reaped: Failed).
  void on_timer(Clock::time_point now, spdlog::logger& log);
  // The master stops: a new master still starting is stopped too (reaped: Failed).
  void cancel();

 private:
  pid_t new_master_ = 0;
  pid_t successor_ = 0;
  pid_t requester_ = 0;
  std::string binary_;
  std::string pid_path_;  // the pid file's own name while it is <pid file>.oldbin
  std::optional<Clock::time_point> deadline_;
};

}  // namespace rill::process
