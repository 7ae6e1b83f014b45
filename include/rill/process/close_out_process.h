#pragma once
// The close-out of leftover recordings after a worker died (record/close_out.h,
// docs/recording.md "Crashes"), in a short-lived child of the master, "rill: close-out": the files
// a dead worker was writing are leftovers now (its locks went with it). A child and not a thread:
// the master stays free for signals and respawns however large the files are, and forking from the
// single-threaded master is safe where a thread of the master would not be (it forks workers).
// Only files modified since the dead worker started are looked at; the master reaps the child as
// an unknown child.
#include <sys/types.h>

#include <chrono>

namespace spdlog {
class logger;
}
namespace rill::config {
struct Config;
}

namespace rill::process {

class PidFile;

// Forks the child when an app records; returns its pid, 0 when no app records, -1 when fork()
// failed (errno set). The child never returns.
pid_t fork_close_out(const config::Config& cfg, std::chrono::steady_clock::duration dead_worker_lifetime,
                     spdlog::logger& log, PidFile* pid_file);

}  // namespace rill::process
