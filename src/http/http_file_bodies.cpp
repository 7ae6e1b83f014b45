// HttpFileBodies: one memory file per large shared buffer (http_file_bodies.h).
#include "rill/http/http_file_bodies.h"

#include <errno.h>

namespace rill::http {

void HttpFileBodies::drop_released() {
  std::erase_if(entries_, [](const auto& kv) { return kv.second.keep.get()->use_count() == 1; });
}

std::shared_ptr<const net::FileBody> HttpFileBodies::file_for(const BufferRef& body) {
  if (!body || body.size() < kMinBytes) return nullptr;
  auto it = entries_.find(body.get());
  if (it != entries_.end()) return it->second.file;
  if (disabled_) return nullptr;
  drop_released();
  if (entries_.size() >= kMaxEntries) return nullptr;
  std::shared_ptr<const net::FileBody> file = net::memory_file_of(body.span());
  if (!file) {
    // Refused for good (seccomp, a kernel without memfd_create): stop asking. Anything else
    // (EMFILE, ENOMEM) is tried again with the next buffer.
    if (errno == ENOSYS || errno == EPERM || errno == EACCES) disabled_ = true;
    return nullptr;
  }
  ++files_made_;
  entries_.emplace(body.get(), Entry{body, file});
  return file;
}

}  // namespace rill::http
