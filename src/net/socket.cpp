#include "rill/net/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace rill::net {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

void EventFree::operator()(event* ev) const { event_free(ev); }

UniqueFd connect_unix(const std::string& path, std::string* error) {
  auto failed = [&](const char* why) {
    if (error) *error = "connect to " + path + ": " + why;
    return UniqueFd();
  };
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) return failed("path too long for a Unix socket");
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return failed(std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return failed(std::strerror(errno));
  return fd;
}

UniqueFd connect_tcp(const sockaddr* addr, socklen_t len, std::string* error) {
  UniqueFd fd(::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd) {
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd.get(), addr, len) == 0 || errno == EINPROGRESS) return fd;
  }
  if (error) *error = std::strerror(errno);
  return UniqueFd();
}

int connect_result(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

std::string peer_name(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    std::string name = "[";  // built piecewise: GCC 12 warns (-Wrestrict) on "[" + std::string(...)
    name += host;
    name += "]:";
    name += std::to_string(ntohs(a->sin6_port));
    return name;
  }
  return "unix";
}

}  // namespace rill::net
