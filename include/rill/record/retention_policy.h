#pragma once
// The retention rule of an app's recordings (apps.NAME.record.retention), as a pure function:
// given every file of the app, which to delete. Files go oldest first (by start); a file being
// written (locked) is never deleted, and still counts towards max_bytes.
//   - max_age: a file whose start is more than max_age before `now` is deleted;
//   - max_bytes: while all the files together hold more than max_bytes, the oldest one that may
//     be deleted is.
// A limit of 0 is no limit.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <span>
#include <vector>

namespace rill::record {

struct RetentionCandidate {
  std::time_t start = 0;  // the recording's start (wall clock, seconds)
  uint64_t bytes = 0;
  bool locked = false;  // being written
};

struct RetentionLimits {
  std::chrono::seconds max_age{0};
  uint64_t max_bytes = 0;
};

// Indexes into `files` of those to delete, oldest first.
std::vector<size_t> files_past_retention(std::span<const RetentionCandidate> files,
                                         const RetentionLimits& limits, std::time_t now);

}  // namespace rill::record
