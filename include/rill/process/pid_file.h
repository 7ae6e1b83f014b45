#pragma once
// The master's pid file. The master keeps the file open with an exclusive flock() for its whole
// life: a second master using the same pid file is refused even if the pid in the file was
// reused, and a file left behind by a crash (no lock) is simply taken over.
#include <sys/types.h>

#include <optional>
#include <string>

namespace rill::process {

class PidFile {
 public:
  // Creates/locks PATH (parent directories are created) and writes getpid() into it.
  // Throws std::runtime_error when another live rill holds it ("rill is already running
  // (pid N, pid file PATH)") or the file cannot be written.
  explicit PidFile(std::string path);
  // Removes the file (if it still names this process) and releases the lock.
  ~PidFile();
  PidFile(const PidFile&) = delete;
  PidFile& operator=(const PidFile&) = delete;

  const std::string& path() const { return path_; }
  // In a forked child: close the descriptor without touching the file or the lock (the lock
  // belongs to the open file description the master still holds).
  void close_in_child();
  // A binary upgrade: move the file to PATH (the old master's "<pid file>.oldbin"), keeping its
  // lock, so that the new master writes its own at the old name; and back when the new binary
  // failed. Returns false (errno set) when rename(2) fails; the file then stays where it was.
  bool rename_to(const std::string& path);

  // Remove the file now (idempotent).
  void remove();

 private:
  std::string path_;
  int fd_ = -1;
  bool removed_ = false;
};

// Read the pid stored in PATH. Returns nullopt and fills *error ("cannot open pid file PATH:
// No such file or directory", "pid file PATH does not hold a pid") otherwise.
std::optional<pid_t> read_pid_file(const std::string& path, std::string* error);

}  // namespace rill::process
