#include "rill/core/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace rill::core {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void become(const std::vector<char*>& argv, int out_fd, pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(126);  // the worker died before the death signal was set
  // The worker blocks and handles signals; a command starts with the defaults.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  const int in = ::open("/dev/null", O_RDONLY);
  if (in >= 0 && in != 0) ::dup2(in, 0);
  ::dup2(out_fd, 1);
  ::dup2(out_fd, 2);
  // Nothing else of the worker's (listeners, clients, files) is the command's.
  ::syscall(SYS_close_range, 3u, ~0u, 0u);
  ::execvp(argv[0], argv.data());
  const char* why = std::strerror(errno);
  (void)!::write(2, "exec ", 5);
  (void)!::write(2, argv[0], std::strlen(argv[0]));
  (void)!::write(2, ": ", 2);
  (void)!::write(2, why, std::strlen(why));
  (void)!::write(2, "\n", 1);
  ::_exit(127);
}

}  // namespace

SpawnedChild spawn_child(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::runtime_error("spawn: empty command");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) fail("spawn " + argv[0] + ": pipe");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    fail("spawn " + argv[0] + ": fork");
  }
  if (pid == 0) become(args, fds[1], parent);
  ::close(fds[1]);
  ::setpgid(pid, pid);  // also here: a stop right after the fork must reach the group
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  SpawnedChild c;
  c.pid = pid;
  c.output = fds[0];
  c.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (c.pidfd < 0) {
    const int err = errno;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    ::close(fds[0]);
    errno = err;
    fail("spawn " + argv[0] + ": pidfd_open (Linux >= 5.3 needed)");
  }
  ::fcntl(c.pidfd, F_SETFD, FD_CLOEXEC);
  return c;
}

int reap_child(pid_t pid) {
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  return r == pid ? status : -1;
}

void signal_child_group(pid_t pid, int sig) {
  if (::kill(-pid, sig) != 0) ::kill(pid, sig);  // the group may be gone while the child lingers
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "status " + std::to_string(status);
}

}  // namespace rill::core
