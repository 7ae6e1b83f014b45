#pragma once
// HlsSequenceMemo: the HLS position (next media sequence, discontinuities so far) of every stream
// last segmented on any worker, in shared memory (shared_area.h) mapped by the master before it forks
// (owned by the OwnershipTable, so every worker and every generation inherits it). A stream
// published again on another worker — a publisher reconnecting after a reload lands on the new
// generation — continues its media sequence instead of restarting at 0 (RFC 8216 §6.2.2).
//
// It also names the stream's HLS *holder*: the worker (slot, pid) that segmented it last and
// still keeps its state. Once the publisher left, the ownership table names nobody, but that
// worker serves the ended playlist (EXT-X-ENDLIST) for the store's grace period; every other
// worker asks it (StreamLocator::hls_source). The holder is written with each position and
// cleared when that worker drops the state.
//
// A direct-mapped table of 4096 slots indexed by the key's FNV-1a hash: a slot holds one key's
// 64-bit hash, its position and its holder. Two keys sharing a slot overwrite each other; a
// reader whose hash does not match gets nothing (the stream starts at 0, as without the memo;
// no holder: the worker's own store answers). Only the owner of a stream writes its slot (the
// holder alone clears its own name, by compare-and-swap); a reader checks the hash before and
// after reading the values (a seqlock keyed by the hash), so it never pairs values of two
// writes of another key.
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "rill/media/hls_store.h"
#include "rill/workers/shared_area.h"

namespace rill::workers {

class HlsSequenceMemo final : public media::HlsContinuity {
 public:
  static constexpr size_t kSlots = 4096;
  // Maps a new area, or the one behind inherited_fd (a binary upgrade: shared_area.h); throws
  // std::runtime_error. Inherited across fork().
  explicit HlsSequenceMemo(int inherited_fd = -1);
  int shared_fd() const;
  ~HlsSequenceMemo() override;
  HlsSequenceMemo(const HlsSequenceMemo&) = delete;
  HlsSequenceMemo& operator=(const HlsSequenceMemo&) = delete;

  std::optional<media::HlsPosition> recall(const std::string& key) const override;
  // Also records this process as the holder (set_holder), when it is set.
  void remember(const std::string& key, const media::HlsPosition& at) override;
  // This process's HlsStore dropped key's state: it is no longer the holder (if it was).
  void dropped(const std::string& key) override;

  // The worker this process is (set once per worker process: the memo object is each
  // process's own copy after fork, its slots are shared). Unset: no holder is recorded.
  void set_holder(int slot, pid_t pid);
  struct Holder {
    int slot = -1;
    pid_t pid = 0;
  };
  // The worker that keeps key's HLS state, as last recorded (it may have exited since).
  std::optional<Holder> holder(const std::string& key) const;

  struct Slot;  // shared-memory layout (hls_sequence_memo.cpp)

 private:
  std::unique_ptr<SharedArea> area_;
  Slot* slots_ = nullptr;
  uint64_t self_ = 0;  // this process as a holder word (0: none)
};

}  // namespace rill::workers
