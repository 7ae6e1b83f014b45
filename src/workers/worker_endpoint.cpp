#include "rill/workers/worker_endpoint.h"

#include <errno.h>
#include <event2/event.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "rill/net/connection.h"
#include "rill/workers/worker_link_session.h"

namespace rill::workers {

std::string worker_socket_path(const std::string& runtime_dir, int slot) {
  std::string dir = runtime_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/worker-" + std::to_string(slot) + ".sock";
}

std::string worker_process_socket_path(const std::string& runtime_dir, int slot, pid_t pid) {
  std::string slot_path = worker_socket_path(runtime_dir, slot);
  return slot_path.substr(0, slot_path.size() - 5) + "." + std::to_string(pid) + ".sock";
}

WorkerEndpoint::WorkerEndpoint(net::WorkerCore& ctx, const StreamLocator* locator, WorkerDetails& details)
    : ctx_(ctx), locator_(locator), details_(details) {}

WorkerEndpoint::~WorkerEndpoint() { stop(); }

bool WorkerEndpoint::start(const std::string& runtime_dir, int slot) {
  path_ = worker_socket_path(runtime_dir, slot);
  process_path_ = worker_process_socket_path(runtime_dir, slot, ::getpid());
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (process_path_.size() >= sizeof sa.sun_path) {
    ctx_.log->error("worker link: socket path {} is too long", process_path_);
    return false;
  }
  std::memcpy(sa.sun_path, process_path_.c_str(), process_path_.size() + 1);

  std::error_code ec;
  std::filesystem::create_directories(runtime_dir, ec);  // the master made it; this is a fallback
  if (ec) ctx_.log->warn("worker link: cannot create runtime_dir {}: {}", runtime_dir, ec.message());

  fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd_) {
    ctx_.log->error("worker link: socket: {}", std::strerror(errno));
    return false;
  }
  ::unlink(process_path_.c_str());  // stale: a process of this pid that is gone
  // Created with mode 0600 from the start (no window where another user could connect).
  const mode_t old_mask = ::umask(0177);
  const int rc = ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  ::umask(old_mask);
  if (rc != 0 || ::listen(fd_.get(), 512) != 0) {
    ctx_.log->error("worker link: cannot listen on {}: {} (cross-worker playback of this worker's streams is off)",
                    process_path_, std::strerror(errno));
    fd_.reset();
    return false;
  }
  ::chmod(process_path_.c_str(), 0600);
  struct stat sb{};
  if (::stat(process_path_.c_str(), &sb) == 0) {
    inode_ = sb.st_ino;
    dev_ = sb.st_dev;
  }
  // The slot's name now points to us; an older worker of the slot keeps its own name, so
  // nothing that reaches it by pid is cut (a reload: docs/operations.md).
  const std::string tmp = process_path_ + ".tmp";
  ::unlink(tmp.c_str());
  if (::link(process_path_.c_str(), tmp.c_str()) != 0 || ::rename(tmp.c_str(), path_.c_str()) != 0) {
    ctx_.log->warn("worker link: cannot name {} as {}: {}", process_path_, path_, std::strerror(errno));
    ::unlink(tmp.c_str());
  }
  accept_ev_.reset(event_new(ctx_.base, fd_.get(), EV_READ | EV_PERSIST, &WorkerEndpoint::on_accept, this));
  event_add(accept_ev_.get(), nullptr);
  ctx_.log->info("worker link: listening on {} ({})", path_, process_path_);
  return true;
}

void WorkerEndpoint::stop() {
  accept_ev_.reset();
  if (!fd_) return;
  fd_.reset();
  // Remove the file only if it is still ours: a new worker of this slot (respawn, reload) may
  // have replaced it already.
  struct stat sb{};
  if (::stat(path_.c_str(), &sb) == 0 && sb.st_ino == inode_ && sb.st_dev == dev_) ::unlink(path_.c_str());
  ::unlink(process_path_.c_str());
}

void WorkerEndpoint::on_accept(int, short, void* arg) { static_cast<WorkerEndpoint*>(arg)->accept_all(); }

void WorkerEndpoint::accept_all() {
  for (int i = 0; i < 256; ++i) {
    int fd = ::accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) ctx_.log->warn("worker link: accept: {}", std::strerror(errno));
      return;
    }
    auto conn = std::make_unique<net::PlainConnection>(ctx_.base, *ctx_.flusher, net::UniqueFd(fd), "unix");
    auto* s = static_cast<WorkerLinkSession*>(
        ctx_.sessions->add(std::make_unique<WorkerLinkSession>(ctx_, locator_, details_, std::move(conn))));
    s->start();
  }
}

}  // namespace rill::workers
