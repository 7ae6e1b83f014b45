#pragma once
// Starting a helper command as a child of the worker (the exec hooks of docs/abr.md): argv only
// (no shell unless the command names one), in a process group of its own so that a stop reaches
// whatever it starts, stdin /dev/null, stdout and stderr into one pipe the caller reads. The
// child gets PR_SET_PDEATHSIG(SIGKILL): it dies with the worker, even on a kill -9 of the worker.
// A pidfd (Linux >= 5.3) tells the caller's event loop when it exits, without a SIGCHLD handler.
#include <sys/types.h>

#include <string>
#include <vector>

namespace rill::core {

struct SpawnedChild {
  pid_t pid = -1;   // also its process group id
  int pidfd = -1;   // readable when the child has exited (then reap_child)
  int output = -1;  // the read end of its stdout+stderr pipe, non-blocking
};

// Starts `argv` (argv[0] searched in PATH). Throws std::runtime_error with the reason when the
// pipe, pidfd or fork fails; a program that cannot be executed exits with status 127 and says why
// on its output.
SpawnedChild spawn_child(const std::vector<std::string>& argv);

// Collects an exited child; returns its wait status, or -1 when it has not exited.
int reap_child(pid_t pid);

// Sends `sig` to the child's process group.
void signal_child_group(pid_t pid, int sig);

// "exited with 3", "killed by signal 9 (Killed)".
std::string describe_wait_status(int status);

}  // namespace rill::core
