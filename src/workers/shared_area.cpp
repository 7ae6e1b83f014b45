#include "rill/workers/shared_area.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace rill::workers {

namespace {

[[noreturn]] void fail(const std::string& name, const std::string& what, int err) {
  throw std::runtime_error("shared area " + name + ": " + what +
                           (err ? ": " + std::string(std::strerror(err)) : ""));
}

}  // namespace

SharedArea::SharedArea(const std::string& name, size_t size, int inherited_fd) : size_(size) {
  if (inherited_fd >= 0) {
    struct stat st {};
    if (::fstat(inherited_fd, &st) != 0)
      fail(name, "inherited descriptor " + std::to_string(inherited_fd), errno);
    if (static_cast<size_t>(st.st_size) != size)
      fail(name,
           "inherited descriptor " + std::to_string(inherited_fd) + " holds " + std::to_string(st.st_size) +
               " bytes, this build expects " + std::to_string(size),
           0);
    fd_ = inherited_fd;
    adopted_ = true;
    // Inherited across exec with close-on-exec cleared: set it again, so that nothing this master
    // execs later gets it unless it is handed over on purpose.
    ::fcntl(fd_, F_SETFD, FD_CLOEXEC);
  } else {
    fd_ = ::memfd_create(name.c_str(), MFD_CLOEXEC);
    if (fd_ < 0) fail(name, "memfd_create", errno);
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      const int e = errno;
      ::close(fd_);
      fail(name, "ftruncate to " + std::to_string(size) + " bytes", e);
    }
  }
  void* map = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (map == MAP_FAILED) {
    const int e = errno;
    ::close(fd_);
    fail(name, "mmap of " + std::to_string(size) + " bytes", e);
  }
  data_ = map;  // a new memfd reads as zeros
}

SharedArea::~SharedArea() {
  if (data_) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace rill::workers
