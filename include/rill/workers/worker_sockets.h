#pragma once
// The worker processes alive in runtime_dir, found by their sockets (worker_endpoint.h): every
// worker listens on worker-<slot>.<pid>.sock, and worker-<slot>.sock is a hard link to the
// current generation's socket of the slot. After a reload the old generation's workers retire
// (keep their publishers and players until those leave) and are reachable only by their
// per-pid name: the statistics gatherer lists them here so that nothing they carry vanishes
// from the API and the metrics while they retire.
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rill::workers {

struct WorkerSocketName {
  int slot = 0;
  pid_t pid = 0;
};

// "worker-3.12345.sock" -> {3, 12345}; anything else (the slot name, ".tmp" files) -> nullopt.
std::optional<WorkerSocketName> parse_worker_socket_name(std::string_view file_name);

struct WorkerSocket {
  int slot = 0;
  pid_t pid = 0;
  std::string path;
  ino_t inode = 0;
};

// The per-pid sockets in runtime_dir whose process is alive (a worker killed by a signal leaves
// its file behind), at most `limit` of them, in directory order.
std::vector<WorkerSocket> list_worker_sockets(const std::string& runtime_dir, size_t limit = 4096);

// The inode of a path (the slot name and the per-pid name of one worker share it).
std::optional<ino_t> socket_inode(const std::string& path);

}  // namespace rill::workers
