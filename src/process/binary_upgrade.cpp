// Binary upgrade
// ==============
//
// `rill -s upgrade` (SIGUSR2 to the master) replaces the running binary without dropping a client:
//
//   old master                                   new master (the binary at the path, exec'ed)
//   1. renames the pid file to <pid file>.oldbin
//   2. forks; the child clears FD_CLOEXEC on the
//      listening sockets and the shared areas' memfds,
//      sets RILL_UPGRADE and execs the binary ------> 3. reads RILL_UPGRADE, checks the worker link
//                                                       version (refuses a different one unless
//                                                       forced), loads the configuration, writes
//                                                       the pid file, takes the sockets of unchanged
//                                                       addresses and maps the same shared areas
//                                                       (ownership table, HLS sequence memo, stream
//                                                       totals, counters), forks generation + 1
//   5. sd_notify MAINPID=<new> + READY=1; SIGUSR2 <-- 4. SIGWINCH to the old master: "ready"
//      to its workers: they retire as in a reload
//   6. exits when its last worker is gone (removing <pid file>.oldbin)
//
// Because the shared areas cross the exec, the two generations share one ownership table as two
// generations of a reload do: a new worker finds a retiring owner there and pulls its stream over
// the owner's per-pid worker socket; a second publisher of a name is refused across generations;
// HLS media sequences and _total counters go on.
//
// Failure: the new master exits (bad binary: exec fails, code 127; bad configuration; refused
// link version; a crash) or is not ready within kUpgradeReadyTimeout (then SIGKILL): the old
// master renames the pid file back, logs why and serves on; nothing of it changed, so the upgrade
// can be retried. The new master's workers die with it (PR_SET_PDEATHSIG, the master pipe).
#include "rill/process/binary_upgrade.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "rill/core/version.h"

extern char** environ;

namespace rill::process {

int upgrade_outcome_signal() { return SIGRTMIN + 1; }

void report_upgrade_outcome(pid_t requester, bool upgraded) {
  if (requester <= 1) return;
  sigval value{};
  value.sival_int = upgraded ? 0 : 1;
  ::sigqueue(requester, upgrade_outcome_signal(), value);
}

std::string own_executable_path(const char* argv0) {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && !exe.empty()) return exe.string();
  if (!argv0) return {};
  auto abs = std::filesystem::absolute(argv0, ec);
  return ec ? std::string(argv0) : abs.lexically_normal().string();
}

pid_t launch_new_master(const std::string& binary, const std::vector<std::string>& args,
                        const UpgradeHandoff& handoff) {
  struct stat st {};
  if (binary.empty()) throw std::runtime_error("the path of the running binary is unknown");
  if (::stat(binary.c_str(), &st) != 0)
    throw std::runtime_error("cannot start " + binary + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode) || ::access(binary.c_str(), X_OK) != 0)
    throw std::runtime_error("cannot start " + binary + ": not an executable file");

  // Everything the child needs is built before fork: it only calls fcntl, execve and _exit.
  std::vector<int> fds = {handoff.ownership, handoff.hls_memo, handoff.stream_totals, handoff.counters};
  for (const auto& l : handoff.listeners) fds.insert(fds.end(), l.fds.begin(), l.fds.end());
  const std::string variable = std::string(kUpgradeEnvironment) + "=" + encode_upgrade_handoff(handoff);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  const std::string prefix = std::string(kUpgradeEnvironment) + "=";
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) envp.push_back(*e);
  envp.push_back(const_cast<char*>(variable.c_str()));
  envp.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot fork the new master: ") + std::strerror(errno));
  if (pid > 0) return pid;
  for (int fd : fds)
    if (fd >= 0) ::fcntl(fd, F_SETFD, 0);  // inherited across this exec only
  ::execve(binary.c_str(), argv.data(), envp.data());
  const char* why = std::strerror(errno);
  const std::string msg = "rill: binary upgrade: cannot exec " + binary + ": " + why + "\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg.data(), msg.size());
  _exit(127);
}

std::optional<UpgradeStart> take_upgrade_start(spdlog::logger& log) {
  const char* value = std::getenv(kUpgradeEnvironment);
  if (!value) return std::nullopt;
  const std::string text = value;
  ::unsetenv(kUpgradeEnvironment);
  std::string error;
  auto handoff = parse_upgrade_handoff(text, &error);
  if (!handoff) throw std::runtime_error("binary upgrade: " + error);
  UpgradeStart start{std::move(*handoff), false};
  const UpgradeHandoff& h = start.handoff;
  if (auto why = link_version_mismatch(h.link_version, h.version, worker_link_version(), core::version())) {
    if (!h.force)
      throw std::runtime_error(
          "binary upgrade refused: " + *why +
          "; `rill -s upgrade --force` restarts into this binary instead, dropping every client");
    log.warn("binary upgrade forced: {}: a restart, the old generation's clients are dropped", *why);
    start.restart = true;
  }
  return start;
}

void map_shared_areas(const UpgradeStart* upgrade, std::unique_ptr<workers::OwnershipTable>& ownership,
                      std::unique_ptr<workers::ServerCounters>& counters) {
  if (upgrade && !upgrade->restart) {  // the very areas the old generation's workers use
    const UpgradeHandoff& h = upgrade->handoff;
    ownership = std::make_unique<workers::OwnershipTable>(
        workers::OwnershipTable::SharedFds{h.ownership, h.hls_memo, h.stream_totals});
    counters = std::make_unique<workers::ServerCounters>(h.counters);
    return;
  }
  if (upgrade)
    for (int fd : {upgrade->handoff.ownership, upgrade->handoff.hls_memo, upgrade->handoff.stream_totals,
                   upgrade->handoff.counters})
      ::close(fd);
  ownership = std::make_unique<workers::OwnershipTable>();
  counters = std::make_unique<workers::ServerCounters>();
}

bool tell_old_master_ready(pid_t old_master, bool restart) {
  sigval value{};
  value.sival_int = restart ? kUpgradeForceValue : 0;
  return ::sigqueue(old_master, SIGWINCH, value) == 0;
}

}  // namespace rill::process
