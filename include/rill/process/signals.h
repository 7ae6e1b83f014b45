#pragma once
// Signal vocabulary shared by the master, the workers and `rill -s`.
//
//   signal   master                                   worker
//   SIGHUP   reload the configuration                 ignored
//   SIGTERM  fast stop (SIGTERM to workers)           close every session, exit
//   SIGINT   same as SIGTERM                          same as SIGTERM
//   SIGQUIT  graceful stop (SIGQUIT to workers)       stop accepting, drain, exit
//   SIGUSR1  reopen log files, forward to workers     reopen log files
//   SIGUSR2  binary upgrade (binary_upgrade.h)         retire (after a reload or an upgrade)
//   SIGWINCH the new master of an upgrade is ready     -
//   SIGCHLD  reap and respawn workers                 -
//   SIGPIPE  ignored                                  ignored
#include <signal.h>

#include <optional>
#include <string>
#include <string_view>

namespace rill::process {

// `rill -s NAME`: reload -> SIGHUP, stop -> SIGTERM, quit -> SIGQUIT, reopen -> SIGUSR1,
// upgrade -> SIGUSR2.
std::optional<int> signal_for_command(std::string_view command);

// "SIGTERM"; "signal 42" for anything unnamed.
std::string signal_name(int sig);

// The signals the master consumes synchronously (SIGHUP, SIGTERM, SIGINT, SIGQUIT, SIGUSR1,
// SIGCHLD). The master blocks them for its whole life and takes them with sigtimedwait(),
// so no handler ever runs asynchronously and SIGCHLD during fork() is simply left pending.
sigset_t master_signal_set();

// Block master_signal_set() in the calling thread and ignore SIGPIPE. Returns the old mask.
sigset_t block_master_signals();

// In a freshly forked worker: restore default dispositions for master_signal_set(), ignore
// SIGHUP and SIGPIPE. The mask stays blocked; the caller unblocks once its handlers are in place.
void reset_signals_for_worker();

// Unblock every signal in the calling thread.
void unblock_all_signals();

// waitpid() status in words: "exited with code 1", "killed by signal 9 (SIGKILL), core dumped".
std::string describe_wait_status(int status);

}  // namespace rill::process
