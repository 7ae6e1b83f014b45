#pragma once
// ServerCounters: the control plane's `_total` counters, in shared memory (shared_area.h) that the
// master maps before it forks (like the ownership table), one row per worker slot.
//
// Why shared memory: a counter must never go backwards, and a worker can die at any moment
// (kill -9). Each worker adds what its sessions did since it last published (a delta, with an
// atomic add) into its slot's row, and always publishes before it reports a value: whatever a
// client ever saw is already in the row, and a respawned worker of the slot simply goes on adding
// to it. Two generations of one slot (a reload) add to the same row without losing anything.
// What a killed worker had not published yet (at most one second of traffic) is lost.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "rill/workers/shared_area.h"

namespace rill::workers {

enum class Counter : uint8_t {
  BytesIn,         // every session's bytes read
  BytesOut,        // every session's bytes written (HLS responses included)
  AcceptedRtmp,    // RTMP connections (RTMPS included)
  AcceptedFlv,     // HTTP-FLV players
  AcceptedHls,     // HLS requests (playlists and segments)
  AcceptedLink,    // worker-link connections
  DroppedFrames,   // frames dropped for slow consumers
  HlsSegments,     // HLS segments produced
  CpuMicros,       // the worker processes' user + system CPU time
  Respawns,        // the master's respawns of the slot's worker after it died
  RecordBytes,     // bytes written to recording files
  RecordFailures,  // recordings stopped by a write error or a full write queue
  // Downloads of recordings (server/recording_download.h). Last, so that an area inherited from
  // a build without them (a binary upgrade) keeps every other counter where it was; a row has
  // room for 16 counters (one cache-line-aligned row of 128 bytes), so the area's size is the same.
  AcceptedDownload,
  DownloadSendTimeouts,  // closed: their client took no byte within http.timeout
  kCount,
};
inline constexpr size_t kCounterCount = static_cast<size_t>(Counter::kCount);
inline constexpr uint32_t kCounterSlots = 1024;  // = the largest `workers`

class ServerCounters {
 public:
  // Maps a new zeroed area, or the one behind inherited_fd (a binary upgrade: shared_area.h, the
  // totals and the start time go on); throws std::runtime_error.
  explicit ServerCounters(int inherited_fd = -1);
  int shared_fd() const;
  ~ServerCounters();
  ServerCounters(const ServerCounters&) = delete;
  ServerCounters& operator=(const ServerCounters&) = delete;

  // A slot >= kCounterSlots is ignored (reads 0).
  void add(uint32_t slot, Counter c, uint64_t delta);
  uint64_t get(uint32_t slot, Counter c) const;
  // Wall clock of the master's start (ms since the epoch): the server's uptime.
  int64_t started_unix_ms() const;

 private:
  struct alignas(64) Row {
    std::atomic<uint64_t> v[kCounterCount];
  };
  // A binary upgrade maps the old build's area: a new counter must not change a row's size.
  static_assert(sizeof(Row) == 128, "a row of the server counters changed size");
  struct Area {
    std::atomic<int64_t> started_unix_ms;
    Row rows[kCounterSlots];
  };
  std::unique_ptr<SharedArea> shared_;
  Area* area_ = nullptr;
};

// One worker's side: remembers what it already published of each of its own running totals, so
// that publishing adds only the difference. A total that shrank (it cannot, but a caller could
// err) adds nothing.
class CounterPublisher {
 public:
  CounterPublisher(ServerCounters* shared, uint32_t slot) : shared_(shared), slot_(slot) {}
  // Publishes `own_total` (this process's running total of `c`) and returns the slot's value.
  uint64_t publish(Counter c, uint64_t own_total);

 private:
  ServerCounters* shared_;  // null: process-local only (tests, a single process)
  uint32_t slot_;
  uint64_t published_[kCounterCount] = {};
};

}  // namespace rill::workers
