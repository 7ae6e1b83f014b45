#include "rill/process/signals.h"

#include <sys/wait.h>

#include <cstring>

namespace rill::process {

std::optional<int> signal_for_command(std::string_view command) {
  if (command == "reload") return SIGHUP;
  if (command == "stop") return SIGTERM;
  if (command == "quit") return SIGQUIT;
  if (command == "reopen") return SIGUSR1;
  if (command == "upgrade") return SIGUSR2;
  return std::nullopt;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGCHLD: return "SIGCHLD";
    case SIGCONT: return "SIGCONT";
    case SIGSTOP: return "SIGSTOP";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    case SIGWINCH:
      return "SIGWINCH";
    default: return "signal " + std::to_string(sig);
  }
}

sigset_t master_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  // SIGUSR2: a binary upgrade; SIGWINCH: the new master of one says it is ready.
  for (int sig : {SIGHUP, SIGTERM, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCHLD})
    sigaddset(&set, sig);
  return set;
}

namespace {
// Sent by the master to an old worker (retire after a reload or an upgrade). Also a master signal
// (an upgrade), and blocked, so a worker forked from the master holds it pending until its
// handler exists instead of dying of it.
constexpr int kWorkerOnlySignal = SIGUSR2;
}  // namespace

sigset_t block_master_signals() {
  sigset_t set = master_signal_set();
  sigaddset(&set, kWorkerOnlySignal);
  sigset_t old;
  sigprocmask(SIG_BLOCK, &set, &old);
  signal(SIGPIPE, SIG_IGN);
  return old;
}

void reset_signals_for_worker() {
  for (int sig : {SIGTERM, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD}) signal(sig, SIG_DFL);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
}

void unblock_all_signals() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    std::string s = "killed by signal " + std::to_string(sig) + " (" + signal_name(sig) + ")";
    if (WCOREDUMP(status)) s += ", core dumped";
    return s;
  }
  return "changed state (status " + std::to_string(status) + ")";
}

}  // namespace rill::process
