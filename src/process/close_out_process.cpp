#include "rill/process/close_out_process.h"

#include <spdlog/logger.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "rill/config/config.h"
#include "rill/process/pid_file.h"
#include "rill/process/proctitle.h"
#include "rill/record/close_out.h"

namespace rill::process {

pid_t fork_close_out(const config::Config& cfg, std::chrono::steady_clock::duration dead_worker_lifetime,
                     spdlog::logger& log, PidFile* pid_file) {
  const std::vector<record::RecordingRoot> roots = record::recording_roots(cfg);
  if (roots.empty()) return 0;
  // The 2 s: the dead worker's first write may precede its recorded start by the clocks' step.
  const std::time_t since =
      std::time(nullptr) - std::chrono::duration_cast<std::chrono::seconds>(dead_worker_lifetime).count() - 2;
  // Nothing buffered may be inherited (the child ends with _exit, as a worker does).
  log.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  set_proctitle("rill: close-out");
  if (pid_file) pid_file->close_in_child();
  record::close_out_recordings(roots, since, log);
  log.flush();
  _exit(0);
}

}  // namespace rill::process
