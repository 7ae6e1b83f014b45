#include "rill/workers/hls_sequence_memo.h"

#include <sys/mman.h>

#include <cerrno>
#include <new>
#include <system_error>

namespace rill::workers {

struct HlsSequenceMemo::Slot {
  std::atomic<uint64_t> hash{0};  // 0: empty, or being written
  std::atomic<uint64_t> next_sequence{0};
  std::atomic<uint64_t> discontinuities{0};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared memory needs address-free atomics");

namespace {
uint64_t key_hash(const std::string& key) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return h ? h : 1;  // 0 marks an empty slot
}
}  // namespace

HlsSequenceMemo::HlsSequenceMemo() {
  map_size_ = kSlots * sizeof(Slot);
  void* map = ::mmap(nullptr, map_size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of the HLS sequence memo");
  slots_ = static_cast<Slot*>(map);
  for (size_t i = 0; i < kSlots; ++i) new (&slots_[i]) Slot();
}

HlsSequenceMemo::~HlsSequenceMemo() {
  if (slots_) ::munmap(slots_, map_size_);
}

std::optional<media::HlsPosition> HlsSequenceMemo::recall(const std::string& key) const {
  const uint64_t h = key_hash(key);
  const Slot& s = slots_[h % kSlots];
  if (s.hash.load(std::memory_order_acquire) != h) return std::nullopt;
  media::HlsPosition at;
  at.next_sequence = s.next_sequence.load(std::memory_order_acquire);
  at.discontinuities = s.discontinuities.load(std::memory_order_acquire);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (s.hash.load(std::memory_order_relaxed) != h) return std::nullopt;
  return at;
}

void HlsSequenceMemo::remember(const std::string& key, const media::HlsPosition& at) {
  const uint64_t h = key_hash(key);
  Slot& s = slots_[h % kSlots];
  s.hash.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.next_sequence.store(at.next_sequence, std::memory_order_relaxed);
  s.discontinuities.store(at.discontinuities, std::memory_order_relaxed);
  s.hash.store(h, std::memory_order_release);
}

}  // namespace rill::workers
