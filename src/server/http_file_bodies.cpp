#include "rill/server/http_file_bodies.h"

#include <event2/buffer.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace rill::server {

namespace {

// The bytes into a new anonymous memory file; -1 on any failure.
int memory_file_of(const SharedBuffer& b) {
  const int fd = memfd_create("rill-http-body", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < b.size()) {
    const ssize_t n = ::write(fd, b.data() + done, b.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  return fd;
}

}  // namespace

HttpFileBodies::~HttpFileBodies() {
  for (auto& [key, e] : entries_) evbuffer_file_segment_free(e.segment);
}

void HttpFileBodies::drop_released() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.keep.get()->use_count() == 1) {
      evbuffer_file_segment_free(it->second.segment);  // in-flight responses keep their own reference
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

evbuffer_file_segment* HttpFileBodies::segment_for(const BufferRef& body) {
  auto it = entries_.find(body.get());
  if (it != entries_.end()) return it->second.segment;
  if (disabled_) return nullptr;
  drop_released();
  if (entries_.size() >= kMaxEntries) return nullptr;
  const int fd = memory_file_of(*body.get());
  if (fd < 0) {
    disabled_ = true;
    return nullptr;
  }
  evbuffer_file_segment* seg = evbuffer_file_segment_new(fd, 0, static_cast<ev_off_t>(body.size()),
                                                         EVBUF_FS_CLOSE_ON_FREE | EVBUF_FS_DISABLE_LOCKING);
  if (!seg) {
    ::close(fd);
    return nullptr;
  }
  ++files_made_;
  entries_.emplace(body.get(), Entry{body, seg});
  return seg;
}

bool HttpFileBodies::add(evbuffer* out, const BufferRef& body) {
  if (!body || body.size() < kMinBytes) return false;
  evbuffer_file_segment* seg = segment_for(body);
  if (!seg) return false;
  // libevent sends a file segment with sendfile only into a buffer that drains to a descriptor;
  // evhttp moves these chains into the socket bufferevent's output as they are.
  evbuffer_set_flags(out, EVBUFFER_FLAG_DRAINS_TO_FD);
  return evbuffer_add_file_segment(out, seg, 0, static_cast<ev_off_t>(body.size())) == 0;
}

}  // namespace rill::server
