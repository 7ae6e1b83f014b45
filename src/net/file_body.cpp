// net::FileBody: a memory file written once (file_body.h).
#include "rill/net/file_body.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

namespace rill::net {

std::shared_ptr<const FileBody> memory_file_of(std::span<const uint8_t> bytes) {
  UniqueFd fd(memfd_create("rill-body", MFD_CLOEXEC));
  if (!fd) return nullptr;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return nullptr;
    done += static_cast<size_t>(n);
  }
  auto body = std::make_shared<FileBody>();
  body->fd = std::move(fd);
  body->size = bytes.size();
  return body;
}

}  // namespace rill::net
