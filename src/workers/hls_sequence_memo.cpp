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
  std::atomic<uint64_t> holder{0};  // (slot + 1) << 32 | pid; 0: none
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared memory needs address-free atomics");

namespace {
uint64_t key_hash(const std::string& key) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return h ? h : 1;  // 0 marks an empty slot
}

uint64_t holder_word(int slot, pid_t pid) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(slot) + 1) << 32) | static_cast<uint32_t>(pid);
}
}  // namespace

HlsSequenceMemo::HlsSequenceMemo(int inherited_fd)
    : area_(std::make_unique<SharedArea>("rill-hls-sequence-memo", kSlots * sizeof(Slot), inherited_fd)) {
  slots_ = static_cast<Slot*>(area_->data());
  if (!area_->adopted())
    for (size_t i = 0; i < kSlots; ++i) new (&slots_[i]) Slot();
}

HlsSequenceMemo::~HlsSequenceMemo() = default;

int HlsSequenceMemo::shared_fd() const { return area_->fd(); }

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
  s.holder.store(self_, std::memory_order_relaxed);
  s.hash.store(h, std::memory_order_release);
}

void HlsSequenceMemo::dropped(const std::string& key) {
  const uint64_t h = key_hash(key);
  Slot& s = slots_[h % kSlots];
  if (self_ == 0 || s.hash.load(std::memory_order_acquire) != h) return;
  // Only if it is still us: another worker that segmented the stream since holds it now.
  uint64_t expected = self_;
  s.holder.compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
}

void HlsSequenceMemo::set_holder(int slot, pid_t pid) { self_ = holder_word(slot, pid); }

std::optional<HlsSequenceMemo::Holder> HlsSequenceMemo::holder(const std::string& key) const {
  const uint64_t h = key_hash(key);
  const Slot& s = slots_[h % kSlots];
  if (s.hash.load(std::memory_order_acquire) != h) return std::nullopt;
  const uint64_t word = s.holder.load(std::memory_order_acquire);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (s.hash.load(std::memory_order_relaxed) != h || word == 0) return std::nullopt;
  return Holder{static_cast<int>((word >> 32) - 1), static_cast<pid_t>(word & 0xffffffffu)};
}

}  // namespace rill::workers
