#include "context.h"

#include <cstdio>
#include <cstdlib>

namespace rill::loadgen {

void SendTimeBoard::record(uint32_t timestamp, int64_t send_ns) {
  Slot& s = slots_[timestamp % kSlots];
  s.key.store(kEmpty, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.ns.store(send_ns, std::memory_order_relaxed);
  s.key.store(timestamp, std::memory_order_release);
}

std::optional<int64_t> SendTimeBoard::lookup(uint32_t timestamp) const {
  const Slot& s = slots_[timestamp % kSlots];
  if (s.key.load(std::memory_order_acquire) != timestamp) return std::nullopt;
  int64_t ns = s.ns.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (s.key.load(std::memory_order_relaxed) != timestamp) return std::nullopt;
  return ns;
}

ThreadContext::ThreadContext(const Options& o) : opt(o), debug(std::getenv("RILL_BENCH_DEBUG") != nullptr) {}

void ThreadContext::error(std::string_view kind, std::string_view detail) {
  ++errors[std::string(kind)];
  error_count.fetch_add(1, std::memory_order_relaxed);
  if (debug) {
    std::fprintf(stderr, "rill-bench: %.*s%s%.*s\n", int(kind.size()), kind.data(), detail.empty() ? "" : ": ",
                 int(detail.size()), detail.data());
  }
}

}  // namespace rill::loadgen
