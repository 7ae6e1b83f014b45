#pragma once
// HlsSequenceMemo: the HLS position (next media sequence, discontinuities so far) of every stream
// last segmented on any worker, in anonymous shared memory mapped by the master before it forks
// (owned by the OwnershipTable, so every worker and every generation inherits it). A stream
// published again on another worker — a publisher reconnecting after a reload lands on the new
// generation — continues its media sequence instead of restarting at 0 (RFC 8216 §6.2.2).
//
// A direct-mapped table of 4096 slots indexed by the key's FNV-1a hash: a slot holds one key's
// 64-bit hash and its position. Two keys sharing a slot overwrite each other; a reader whose
// hash does not match gets nothing (the stream starts at 0, as without the memo). Only the
// owner of a stream writes its slot; a reader checks the hash before and after reading the
// values (a seqlock keyed by the hash), so it never pairs values of two writes of another key.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "rill/media/hls_store.h"

namespace rill::workers {

class HlsSequenceMemo final : public media::HlsContinuity {
 public:
  static constexpr size_t kSlots = 4096;
  HlsSequenceMemo();  // maps (throws std::system_error); inherited across fork()
  ~HlsSequenceMemo() override;
  HlsSequenceMemo(const HlsSequenceMemo&) = delete;
  HlsSequenceMemo& operator=(const HlsSequenceMemo&) = delete;

  std::optional<media::HlsPosition> recall(const std::string& key) const override;
  void remember(const std::string& key, const media::HlsPosition& at) override;

  struct Slot;  // shared-memory layout (hls_sequence_memo.cpp)

 private:
  Slot* slots_ = nullptr;
  size_t map_size_ = 0;
};

}  // namespace rill::workers
