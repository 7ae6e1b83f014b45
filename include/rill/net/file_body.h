#pragma once
// FileBody: bytes held in a file (an anonymous memory file, memfd_create(2)) that a plain
// connection sends with sendfile(2) — the kernel references the file's pages instead of copying
// the bytes from user memory per send. Shared: every response that sends it holds a reference,
// and the descriptor closes with the last one.
#include <cstddef>
#include <memory>
#include <span>

#include "rill/net/socket.h"

namespace rill::net {

struct FileBody {
  UniqueFd fd;
  size_t size = 0;
};

// A new memory file holding `bytes`, or null (errno set) when none can be made: memfd_create
// refused (seccomp, an old kernel) or the write failed.
std::shared_ptr<const FileBody> memory_file_of(std::span<const uint8_t> bytes);

}  // namespace rill::net
