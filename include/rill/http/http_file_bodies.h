#pragma once
// HttpFileBodies: large response bodies (HLS segments, parts, init sections) sent with
// sendfile(2) instead of from user memory.
//
// Every HLS client of a stream fetches the same segment. Sent from a buffer, each response copies
// the bytes into the kernel once more (perf: ~7 % of a worker serving 300 clients in
// `_copy_from_iter`); nginx serves the same files from tmpfs by sendfile, where the kernel only
// references page-cache pages. With `http.sendfile: true`, the first time a large shared buffer is
// answered on a plain connection its bytes go once into an anonymous memory file
// (net::memory_file_of) and every response sends that file (net::Connection::send_file): one copy
// per buffer and worker, not one per response. Off by default: on loopback the splice and the
// second system call per response cost more than the copy (docs/hls.md has the A/B).
//
// An entry keeps its buffer alive (a BufferRef), so a buffer's address cannot be reused while it
// is a key; an entry whose buffer nobody else holds any more (the segment left the store) is
// dropped on the next insert. A file in flight is shared by the connections sending it and
// outlives its entry. When no memory file can be made the body goes from memory as before; where
// memfd_create is refused for good (ENOSYS, EPERM, EACCES: seccomp, an old kernel) the cache turns
// itself off, anything else (EMFILE, ENOMEM) is tried again with the next buffer.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "rill/core/buffer.h"
#include "rill/net/file_body.h"

namespace rill::http {

class HttpFileBodies {
 public:
  // Bodies under this size go from memory: one sendmsg with the head is cheaper than a sendmsg
  // plus a sendfile (a playlist, a small LL-HLS part).
  static constexpr size_t kMinBytes = 16 * 1024;
  static constexpr size_t kMaxEntries = 512;  // bounds memory if buffers were never released

  // The memory file with body's bytes (made on the first call for this buffer), or null for a
  // small body, a full cache, or when memory files cannot be made here.
  std::shared_ptr<const net::FileBody> file_for(const BufferRef& body);

  size_t entries() const { return entries_.size(); }
  uint64_t files_made() const { return files_made_; }  // memory files written (one per buffer)
  bool disabled() const { return disabled_; }

 private:
  struct Entry {
    BufferRef keep;  // pins the key's address
    std::shared_ptr<const net::FileBody> file;
  };
  void drop_released();  // entries whose buffer only we still hold

  std::unordered_map<const SharedBuffer*, Entry> entries_;
  uint64_t files_made_ = 0;
  bool disabled_ = false;  // memfd_create refused for good: not retried per request
};

}  // namespace rill::http
