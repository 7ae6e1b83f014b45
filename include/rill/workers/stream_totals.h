#pragma once
// StreamTotals: the per-stream `_total` counters of the control plane (bytes in and out, dropped
// frames, HLS segments), added up over every worker, in shared memory (shared_area.h) mapped with the
// OwnershipTable (one cell per table entry), so inherited by every worker of every generation.
//
// A stream's counters belong to its *life*: one claim of the ownership table (one publish), named
// by the entry's index and the claim's ticket (unique and increasing over the server's life).
// Every worker adds what its sessions did for the stream since it last published (deltas:
// StreamTally) to the cell of the life current now, and the owner reads the cell when it reports
// the stream. A worker killed with SIGKILL leaves what it added behind, so a stream's totals never
// go back while it lives (at most the killed worker's last unpublished second is lost, as with
// ServerCounters). The next life of the entry — any stream published after this one ended —
// starts its cell from zero: a stream published again starts again from zero, and what a dead
// worker added to a stream that ended is forgotten with it. The memory is fixed (kCells cells).
//
// Writers take a per-cell lock word (the holder's pid): a lock left by a process that died is
// taken over, and the master frees those of a worker it reaps (OwnershipTable::release_all_of).
// Readers take no lock: the cell's ticket, read before and after the values, validates them.
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "rill/workers/shared_area.h"

namespace rill::workers {

class StreamTotals {
 public:
  static constexpr size_t kCells = 4096;  // = OwnershipTable::kCapacity
  enum Field : size_t { BytesIn, BytesOut, DroppedFrames, HlsSegments, kFields };
  using Values = std::array<uint64_t, kFields>;
  // One life of a stream: its ownership table entry and the claim's ticket.
  struct Life {
    size_t index = 0;
    uint64_t ticket = 0;
  };
  enum class Added {
    Yes,    // added to the life's cell
    Busy,   // another live process held the cell's lock all along: try again later
    Ended,  // a later life took the cell: this one is over, there is nothing to add to
  };

  // Maps a new zeroed area, or the one behind inherited_fd (a binary upgrade: shared_area.h);
  // throws std::runtime_error. Inherited across fork().
  explicit StreamTotals(int inherited_fd = -1);
  int shared_fd() const;
  ~StreamTotals();
  StreamTotals(const StreamTotals&) = delete;
  StreamTotals& operator=(const StreamTotals&) = delete;

  // Adds `delta` to the life's cell, as process `self`; a cell still holding an earlier life
  // starts from zero first.
  Added add(Life life, const Values& delta, pid_t self);
  // The life's totals: zeros before anything was added to it; nothing once a later life took
  // the cell (or for an index out of range).
  std::optional<Values> read(Life life) const;
  // Frees the cell locks held by `pid` (the master, after reaping it). Returns how many.
  size_t unlock_all_of(pid_t pid);
  // For tests: leaves the cell's lock held by `pid`, as a process killed while adding would.
  void hold_lock_for_test(size_t index, pid_t pid);

  struct Cell;  // shared-memory layout (stream_totals.cpp)

 private:
  std::unique_ptr<SharedArea> area_;
  Cell* cells_ = nullptr;
};

}  // namespace rill::workers
