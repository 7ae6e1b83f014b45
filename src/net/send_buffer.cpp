#include "rill/net/send_buffer.h"

#include <sys/socket.h>

#include <climits>

namespace rill::net {

bool set_send_buffer(int fd, size_t bytes) {
  if (bytes == 0) return true;
  const int v = bytes > INT_MAX / 2 ? INT_MAX / 2 : static_cast<int>(bytes);
  return ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) == 0;
}

}  // namespace rill::net
