#pragma once
// WorkerEndpoint: the Unix socket every worker listens on, runtime_dir/worker-<slot>.sock (mode
// 0600, owned by the worker's user). Other workers connect to it to pull a stream this worker
// owns, or to ask for its statistics; each accepted connection becomes a WorkerLinkSession in
// the worker's SessionSet.
//
// The socket is bound at runtime_dir/worker-<slot>.<pid>.sock, the address of this very
// process: the ownership table names an owner by slot and pid, so links, HLS fetches and other
// per-stream requests connect there and reach the owner even when it is an older generation
// still serving its publishers after a reload. worker-<slot>.sock, the slot's address (tools,
// STATS), is a hard link to the same socket, replaced atomically (rename) by each new worker of
// the slot. Both names are unlinked when the worker stops (the slot name only if still ours).
#include <sys/types.h>

#include <string>

#include "rill/net/worker_core.h"
#include "rill/net/socket.h"

namespace rill::workers {

std::string worker_socket_path(const std::string& runtime_dir, int slot);
// The address of one worker process (the owner named by the ownership table).
std::string worker_process_socket_path(const std::string& runtime_dir, int slot, pid_t pid);

class StreamLocator;
class WorkerDetails;

class WorkerEndpoint {
 public:
  // Its link sessions get `locator` and `details` (workers/worker_link_session.h), which outlive them.
  WorkerEndpoint(net::WorkerCore& ctx, const StreamLocator* locator, WorkerDetails& details);
  ~WorkerEndpoint();
  WorkerEndpoint(const WorkerEndpoint&) = delete;
  WorkerEndpoint& operator=(const WorkerEndpoint&) = delete;

  // Binds and listens. False (logged) when the socket cannot be created: this worker then
  // serves its own streams only to its own clients.
  bool start(const std::string& runtime_dir, int slot);
  // Stops accepting and removes the socket file (if it is still ours).
  void stop();
  const std::string& path() const { return path_; }
  const std::string& process_path() const { return process_path_; }

 private:
  static void on_accept(int fd, short what, void* arg);
  void accept_all();

  net::WorkerCore& ctx_;
  const StreamLocator* locator_;
  WorkerDetails& details_;
  std::string path_;          // the slot's name (a hard link)
  std::string process_path_;  // this process's name (bound)
  net::UniqueFd fd_;
  ino_t inode_ = 0;
  dev_t dev_ = 0;
  net::EventPtr accept_ev_;
};

}  // namespace rill::workers
