#pragma once
// OwnershipTable: which worker owns (publishes) which stream, shared by the master and every
// worker process. A fixed-size open-addressing hash table in shared memory (a memfd mapped
// MAP_SHARED: shared_area.h) that the master creates before it forks the first worker; the
// workers inherit the mapping, and it outlives reloads and respawns with the master, and a binary
// upgrade with the descriptors the new master inherits.
//
// Lock-free: every entry has one 64-bit atomic state word (state, version, pid); entries change
// hands only by compare-and-swap on it. Readers copy an entry and validate it by reading the
// state word again (a seqlock: the version changes on every transition). Two workers claiming
// the same key at once race on a ticket: see claim() and docs/workers.md ("Why there is no race").
//
// Capacity: kCapacity entries (4096), keys ("app/name") of at most kMaxKey bytes. Released entries
// are reused. No operation allocates or locks (only construction maps memory); every one is safe
// to call from any process that maps the table, at any time.
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "rill/workers/shared_area.h"

namespace rill::workers {

class HlsSequenceMemo;
class StreamTotals;

class OwnershipTable {
 public:
  static constexpr size_t kCapacity = 4096;
  static constexpr size_t kMaxKey = 320;  // "app/name": 2 x 128 (core/name_rule.h) + 1, with room

  enum class Claim {
    Claimed,     // now ours (new entry)
    AlreadyOurs, // this pid already owned it
    Busy,        // another live process owns it (or wins a concurrent claim)
    TooLong,     // key longer than kMaxKey (or empty)
    Full,        // no free entry
  };

  struct Owner {
    int slot = -1;    // worker slot
    pid_t pid = 0;    // worker process
    uint32_t version = 0;  // entry version when read (changes on every transition)
    size_t index = 0;      // the entry (lookup only): with the ticket, the stream's life (StreamTotals)
    uint64_t ticket = 0;   // the claim's ticket (lookup only), unique and increasing; 0: unknown
  };

  // The descriptors of the table's areas (the table, the HLS sequence memo, the stream totals):
  // what a binary upgrade hands to the new master. -1: create a new area.
  struct SharedFds {
    int table = -1;
    int hls_memo = -1;
    int stream_totals = -1;
  };

  // Maps a fresh table, or the areas of `inherited` (throws std::runtime_error, also when an
  // inherited table is not one of this layout). The mapping is inherited across fork().
  OwnershipTable();
  explicit OwnershipTable(const SharedFds& inherited);
  SharedFds shared_fds() const;
  ~OwnershipTable();  // unmaps (in this process only)
  OwnershipTable(const OwnershipTable&) = delete;
  OwnershipTable& operator=(const OwnershipTable&) = delete;

  Claim claim(std::string_view key, int slot, pid_t pid);
  // Releases key if pid owns it. True if something was released.
  bool release(std::string_view key, pid_t pid);
  std::optional<Owner> lookup(std::string_view key) const;
  // Frees every entry held by pid (the master, when it reaps a worker), and the StreamTotals
  // cell locks it held. Returns the count of entries.
  size_t release_all_of(pid_t pid);

  size_t owned_count() const;  // entries owned right now (for stats and tests)

  // Where each stream's HLS media sequence continues on its next owner (hls_sequence_memo.h):
  // mapped with the table, inherited by every worker of every generation.
  HlsSequenceMemo& hls_memo() { return *hls_memo_; }
  // The per-stream counters of each entry's current life (stream_totals.h): mapped likewise.
  StreamTotals& stream_totals() { return *stream_totals_; }

  // The liveness test used to take over entries of dead owners (kill(pid, 0) == ESRCH).
  static bool process_gone(pid_t pid);

  struct Entry;  // opaque (shared-memory layout, in ownership_table.cpp)
  struct Header;

 private:
  Header* header_ = nullptr;
  Entry* entries_ = nullptr;
  std::unique_ptr<SharedArea> area_;
  std::unique_ptr<HlsSequenceMemo> hls_memo_;
  std::unique_ptr<StreamTotals> stream_totals_;
};

const char* to_string(OwnershipTable::Claim c);

}  // namespace rill::workers
