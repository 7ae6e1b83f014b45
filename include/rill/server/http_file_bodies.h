#pragma once
// HttpFileBodies: large response bodies (HLS segments, parts, init sections) sent with
// sendfile(2) instead of writev(2).
//
// A segment is fetched by every HLS client of a stream. Written from user memory, each response
// copies its bytes into the kernel once more; nginx serves the same files from tmpfs with
// sendfile, where the kernel only references the page-cache pages. So the first time a large
// shared buffer is answered, its bytes go once into an anonymous memory file (memfd_create) and
// every response adds that file to the connection's output (a libevent file segment: sendfile
// when libevent writes it to the socket). The copy happens once per buffer and worker, not once
// per response.
//
// An entry keeps its buffer alive (a BufferRef), so a buffer's address cannot be reused while it
// is a key; an entry whose buffer nobody else holds any more (the segment left the store) is
// dropped on the next insert. A file segment in flight is reference-counted by libevent and
// outlives its entry. Only for plain TCP connections: a TLS bufferevent reads bytes, not files
// (the caller checks). Anything that fails (no memfd: seccomp, old kernel) answers false and the
// caller adds the bytes by reference as before.
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "rill/core/buffer.h"

struct evbuffer;
struct evbuffer_file_segment;

namespace rill::server {

class HttpFileBodies {
 public:
  // Bodies under this many bytes go by reference: one writev with the head is cheaper than a
  // writev plus a sendfile (a playlist, a small LL-HLS part).
  static constexpr size_t kMinBytes = 16 * 1024;
  static constexpr size_t kMaxEntries = 512;  // bounds memory if buffers were never released

  HttpFileBodies() = default;
  ~HttpFileBodies();
  HttpFileBodies(const HttpFileBodies&) = delete;
  HttpFileBodies& operator=(const HttpFileBodies&) = delete;

  // Adds `body` to `out` as a file segment (marking `out` as drained to a socket, so that libevent
  // uses sendfile). False (nothing added) for a small body or when no memory file can be made.
  bool add(evbuffer* out, const BufferRef& body);

  size_t entries() const { return entries_.size(); }
  uint64_t files_made() const { return files_made_; }  // memory files written (one per buffer)

 private:
  struct Entry {
    BufferRef keep;  // pins the key's address
    evbuffer_file_segment* segment = nullptr;
  };
  evbuffer_file_segment* segment_for(const BufferRef& body);
  void drop_released();  // entries whose buffer only we still hold

  std::unordered_map<const SharedBuffer*, Entry> entries_;
  uint64_t files_made_ = 0;
  bool disabled_ = false;  // memfd_create failed once: do not retry per request
};

}  // namespace rill::server
