#pragma once
// SharedArea: a MAP_SHARED mapping backed by a memfd, the memory behind the ownership table, the
// HLS sequence memo, the per-stream totals and the server counters. Forked workers inherit the
// mapping as they would an anonymous one; unlike anonymous memory, the descriptor also lets a new
// master reach the same bytes across exec() (a binary upgrade, process/binary_upgrade.h): it maps
// the descriptor it inherited instead of creating a new area.
#include <cstddef>
#include <string>

namespace rill::workers {

class SharedArea {
 public:
  // A new zeroed area of `size` bytes (memfd named `name`, close-on-exec), or, with
  // inherited_fd >= 0, the area behind that descriptor, which must be `size` bytes long.
  // Throws std::runtime_error naming `name` ("shared area rill-ownership: inherited descriptor 7
  // holds 1000 bytes, this build expects 2000").
  SharedArea(const std::string& name, size_t size, int inherited_fd = -1);
  ~SharedArea();  // unmaps and closes (in this process only)
  SharedArea(const SharedArea&) = delete;
  SharedArea& operator=(const SharedArea&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }
  // True when the area came from an inherited descriptor: its objects are alive already and
  // must not be constructed again.
  bool adopted() const { return adopted_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
  bool adopted_ = false;
};

}  // namespace rill::workers
