#pragma once
// Owning handles for a worker's descriptors and libevent events, and the socket helpers every
// module shares (the one Unix-socket connect, the TCP connect of one address, peer names).
#include <sys/socket.h>

#include <memory>
#include <string>
#include <utility>

struct event;

namespace rill::net {

// Closes its descriptor when destroyed. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    reset(std::exchange(o.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A libevent event freed (and so removed from its base) when the pointer goes.
struct EventFree {
  void operator()(event* ev) const;
};
using EventPtr = std::unique_ptr<event, EventFree>;

// A non-blocking, close-on-exec Unix stream socket connected to `path`. A Unix connect completes
// at once or fails (EAGAIN: the listener's backlog is full), so the socket is usable on return.
// On failure: an empty fd, and *error (when given) says "connect to PATH: REASON".
UniqueFd connect_unix(const std::string& path, std::string* error = nullptr);

// A non-blocking, close-on-exec TCP socket (TCP_NODELAY) whose connect to `addr` (an address,
// never a name: net::TcpConnector resolves and tries each address) has started: wait for
// writability, then connect_result() says how it ended. On failure: an empty fd and *error (the
// errno text).
UniqueFd connect_tcp(const sockaddr* addr, socklen_t len, std::string* error = nullptr);
// 0 once a connect_tcp() socket is connected, else the errno it failed with (SO_ERROR).
int connect_result(int fd);

// "1.2.3.4:5678", "[::1]:5678", or "unix" for an accepted connection's address.
std::string peer_name(const sockaddr_storage& ss);

}  // namespace rill::net
