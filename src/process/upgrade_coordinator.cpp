#include "rill/process/upgrade_coordinator.h"

#include <signal.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "rill/core/version.h"
#include "rill/process/binary_upgrade.h"
#include "rill/process/notify.h"
#include "rill/process/signals.h"

namespace rill::process {

void UpgradeCoordinator::start(const std::string& binary, const std::vector<std::string>& args,
                               const UpgradeHandoff& handoff, PidFile* pid_file, pid_t requester,
                               spdlog::logger& log) {
  log.info("binary upgrade{}: starting {} (this is rill {}, worker link version {})",
           handoff.force ? " (forced)" : "", binary, core::version(), worker_link_version());
  if (pid_file) {
    const std::string own = pid_file->path();
    if (!pid_file->rename_to(own + ".oldbin")) {
      log.error("binary upgrade failed, still serving: cannot rename {} to {}.oldbin: {}", own, own,
                std::strerror(errno));
      report_upgrade_outcome(requester, false);
      return;
    }
    pid_path_ = own;
  }
  try {
    new_master_ = launch_new_master(binary, args, handoff);
  } catch (const std::exception& e) {
    if (pid_file && !pid_path_.empty()) pid_file->rename_to(pid_path_);
    log.error("binary upgrade failed, still serving: {}", e.what());
    report_upgrade_outcome(requester, false);
    return;
  }
  binary_ = binary;
  requester_ = requester;
  deadline_ = Clock::now() + kUpgradeReadyTimeout;
  log.info("binary upgrade: new master started (pid {}); waiting up to {} s for it to be ready", new_master_,
           kUpgradeReadyTimeout.count());
}

bool UpgradeCoordinator::ready(pid_t from, bool restart, spdlog::logger& log) {
  if (new_master_ == 0 || from != new_master_) return false;
  successor_ = new_master_;
  new_master_ = 0;
  deadline_.reset();
  const std::string status = "upgraded: new master pid " + std::to_string(successor_);
  notify::handed_over(successor_, status);
  report_upgrade_outcome(std::exchange(requester_, 0), true);
  log.info("binary upgrade: the new master (pid {}) is ready; {} this master's workers, then exiting",
           successor_, restart ? "stopping (a forced restart)" : "retiring");
  return true;
}

UpgradeCoordinator::Exit UpgradeCoordinator::reaped(pid_t pid, int status, PidFile* pid_file,
                                                    spdlog::logger& log) {
  if (successor_ > 0 && pid == successor_) {
    successor_ = -1;  // still handed over
    std::optional<pid_t> current;
    if (!pid_path_.empty()) current = read_pid_file(pid_path_, nullptr);
    const bool goes_on = pid_path_.empty() || (current && *current != pid && ::kill(*current, 0) == 0);
    log.info("the new master (pid {}) {}; {}", pid, describe_wait_status(status),
             goes_on ? "the service goes on" : "the service stopped");
    return goes_on ? Exit::SuccessorHandedOver : Exit::ServiceStopped;
  }
  if (new_master_ == 0 || pid != new_master_) return Exit::NotOurs;
  new_master_ = 0;
  deadline_.reset();
  if (pid_file && !pid_path_.empty() && !pid_file->rename_to(pid_path_))
    log.error("cannot rename the pid file back to {}: {}", pid_path_, std::strerror(errno));
  log.error(
      "binary upgrade failed: the new master (pid {}, {}) {} before it was ready (its own log says why); "
      "still serving with rill {}; the upgrade can be retried",
      pid, binary_, describe_wait_status(status), core::version());
  notify::ready("binary upgrade failed, still serving");
  report_upgrade_outcome(std::exchange(requester_, 0), false);
  return Exit::Failed;
}

void UpgradeCoordinator::on_timer(Clock::time_point now, spdlog::logger& log) {
  if (!deadline_ || *deadline_ > now) return;
  deadline_.reset();
  log.error("binary upgrade: the new master (pid {}) is not ready after {} s; killing it", new_master_,
            kUpgradeReadyTimeout.count());
  ::kill(new_master_, SIGKILL);
}

void UpgradeCoordinator::cancel() {
  if (new_master_ > 0) ::kill(new_master_, SIGTERM);
}

}  // namespace rill::process
