#include "rill/net/send_buffer.h"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <climits>

namespace rill::net {

namespace {
int clamp_int(size_t bytes) { return bytes > INT_MAX / 2 ? INT_MAX / 2 : static_cast<int>(bytes); }
}  // namespace

bool set_send_buffer(int fd, size_t bytes) {
  if (bytes == 0) return true;
  const int v = clamp_int(bytes);
  return ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) == 0;
}

bool set_notsent_lowat(int fd, size_t bytes) {
  if (bytes == 0) return true;
  const int v = clamp_int(bytes);
  return ::setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof v) == 0;
}

long unacked_send_bytes(int fd) {
  int n = 0;
  return ::ioctl(fd, SIOCOUTQ, &n) == 0 ? n : -1;
}

}  // namespace rill::net
