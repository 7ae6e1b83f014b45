#include "rill/process/memory_policy.h"

#include <dlfcn.h>
#include <event2/event.h>
#include <malloc.h>

#include <cstddef>
#include <filesystem>

namespace rill::process {

namespace {
constexpr int kMmapThreshold = 256 * 1024;
constexpr size_t kTrimWhenFree = 8u << 20;  // free bytes held by the heap worth a trim
constexpr time_t kCheckEverySeconds = 2;
}  // namespace

std::string malloc_library() {
  Dl_info info{};
  void* sym = ::dlsym(RTLD_DEFAULT, "malloc");
  if (!sym || !::dladdr(sym, &info) || !info.dli_fname) return {};
  return std::filesystem::path(info.dli_fname).filename().string();
}

bool glibc_malloc() { return malloc_library().starts_with("libc.so"); }

void apply_worker_malloc_policy() {
  if (!glibc_malloc()) return;
  ::mallopt(M_MMAP_THRESHOLD, kMmapThreshold);  // setting it turns the dynamic threshold off
  ::mallopt(M_TRIM_THRESHOLD, 2 * kMmapThreshold);
  ::mallopt(M_ARENA_MAX, 1);
}

HeapTrimmer::HeapTrimmer(event_base* base) {
  timer_ = event_new(base, -1, EV_PERSIST, &HeapTrimmer::on_timer, this);
  timeval tv{kCheckEverySeconds, 0};
  if (timer_) event_add(timer_, &tv);
}

HeapTrimmer::~HeapTrimmer() {
  if (timer_) event_free(timer_);
}

void HeapTrimmer::on_timer(int, short, void* arg) { static_cast<HeapTrimmer*>(arg)->check(); }

void HeapTrimmer::check() {
  const struct mallinfo2 mi = ::mallinfo2();
  // fordblks: free bytes inside the heap (not returned); keepcost: the part at its top.
  if (mi.fordblks >= kTrimWhenFree) ::malloc_trim(0);
}

}  // namespace rill::process
