#pragma once
// WorkerEndpoint: the Unix socket every worker listens on, runtime_dir/worker-<slot>.sock (mode
// 0600, owned by the worker's user). Other workers connect to it to pull a stream this worker
// owns, or to ask for its statistics; each accepted connection becomes a WorkerLinkSession in
// the worker's SessionSet.
//
// The worker creates the socket when it starts (creating runtime_dir if missing and unlinking a
// stale socket first: the path belongs to the slot, and a respawned or reloaded worker of the
// slot replaces it) and unlinks it when it stops, unless another worker of the slot already
// replaced it.
#include <sys/types.h>

#include <string>

#include "rill/net/server_context.h"
#include "rill/net/socket.h"

namespace rill::workers {

std::string worker_socket_path(const std::string& runtime_dir, int slot);

class WorkerEndpoint {
 public:
  explicit WorkerEndpoint(net::ServerContext& ctx);
  ~WorkerEndpoint();
  WorkerEndpoint(const WorkerEndpoint&) = delete;
  WorkerEndpoint& operator=(const WorkerEndpoint&) = delete;

  // Binds and listens. False (logged) when the socket cannot be created: this worker then
  // serves its own streams only to its own clients.
  bool start(const std::string& runtime_dir, int slot);
  // Stops accepting and removes the socket file (if it is still ours).
  void stop();
  const std::string& path() const { return path_; }

 private:
  static void on_accept(int fd, short what, void* arg);
  void accept_all();

  net::ServerContext& ctx_;
  std::string path_;
  net::UniqueFd fd_;
  ino_t inode_ = 0;
  dev_t dev_ = 0;
  net::EventPtr accept_ev_;
};

}  // namespace rill::workers
