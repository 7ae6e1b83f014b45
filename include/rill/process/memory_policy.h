#pragma once
// How a worker gives memory back to the system after the sessions that needed it are gone
// (docs/operations.md, "Memory"). glibc's defaults keep it: after a large block (a 16 MB RTMP
// message, a big GOP) is freed, the dynamic mmap threshold rises to its size, so the next large
// blocks come from the heap, and the heap is only trimmed at its top. A worker is one thread.
//  - The mmap threshold is fixed at 256 KiB (no dynamic rise): every large buffer is its own
//    mapping and goes back to the system when freed.
//  - One malloc arena (M_ARENA_MAX 1): the worker's allocations never spread over arenas.
//  - malloc_trim(0) every few seconds, only after the heap grew by more than 8 MiB since the last
//    trim (mallinfo2): free pages inside the heap are returned too (madvise), not only its top.
// All of it is glibc's: where malloc is another allocator's (jemalloc, linked by default since it
// measured cheaper, CMakeLists.txt; one preloaded; a sanitizer's), that allocator returns memory by
// its own rules (jemalloc: dirty pages purged over 10 s, blocks over 8 MiB at once) and the policy
// stays off.
#include <memory>
#include <string>

struct event_base;
struct event;

namespace rill::process {

// The shared object malloc() comes from ("libc.so.6", "libjemalloc.so.2"; the executable's own
// path under a sanitizer), as the dynamic linker resolved it.
std::string malloc_library();
// Whether malloc() is glibc's, so that the policy below applies.
bool glibc_malloc();

// Call once, early in the worker process, before it allocates much. A no-op unless glibc_malloc().
void apply_worker_malloc_policy();

// Create only where glibc_malloc().
class HeapTrimmer {
 public:
  explicit HeapTrimmer(event_base* base);
  ~HeapTrimmer();
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;
  // The check itself (also called by the timer): trims when the heap holds enough free memory.
  void check();

 private:
  static void on_timer(int, short, void* arg);
  event* timer_ = nullptr;
};

}  // namespace rill::process
