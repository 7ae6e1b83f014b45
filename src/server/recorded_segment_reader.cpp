#include "rill/server/recorded_segment_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

#include "rill/net/blocking_work_thread.h"

namespace rill::server {

namespace {

// [offset, offset + length) of the file at `path`, or null when it cannot be read whole (the
// history lists only bytes the writer has written).
BufferRef read_range(const std::string& path, uint64_t offset, uint64_t length) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::vector<uint8_t> bytes(length);
  uint64_t got = 0;
  while (got < length) {
    const ssize_t n = ::pread(fd, bytes.data() + got, length - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (got < length) return {};
  return SharedBuffer::copy_of(std::span<const uint8_t>(bytes));
}

}  // namespace

media::HlsStore::RecordedReader recorded_segment_reader(net::BlockingWorkThread& work) {
  return [&work](const std::string& path, uint64_t offset, uint64_t length,
                 std::function<void(BufferRef)> done) {
    return work.submit(
        [path, offset, length, done = std::move(done)]() -> net::BlockingWorkThread::Continuation {
          BufferRef data = read_range(path, offset, length);
          return [done, data = std::move(data)] { done(data); };
        });
  };
}

}  // namespace rill::server
