#pragma once
// RecordingChanges: how many changes this worker made to its recording files — a file opened or
// closed by its FileWriter (FileWriterOptions::on_opened / on_closed, on the writer thread) — for
// the RecordingCatalog of the same worker, whose index of ids (recording_catalog.h) is rebuilt when
// the count moved since it was built. Any thread may note a change or read the count.
#include <atomic>
#include <cstdint>

namespace rill::record {

class RecordingChanges {
 public:
  void note() { count_.fetch_add(1, std::memory_order_release); }
  uint64_t count() const { return count_.load(std::memory_order_acquire); }

 private:
  std::atomic<uint64_t> count_{0};
};

}  // namespace rill::record
