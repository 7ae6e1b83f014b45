#pragma once
// The master process: loads the configuration, owns the listening sockets and the pid file,
// forks and supervises the workers, and turns signals into reload / stop / log reopen.
// See the comment at the top of src/process/master.cpp for the whole process design.
#include <memory>
#include <optional>
#include <string>

#include "rill/config/config.h"

namespace rill::process {

struct MasterOptions {
  std::optional<std::string> config_path;  // -c (made absolute); nullopt: the embedded default
  std::optional<std::string> pid_file;     // -p: overrides pid_file of every loaded config
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
