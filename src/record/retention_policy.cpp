#include "rill/record/retention_policy.h"

#include <algorithm>
#include <numeric>

namespace rill::record {

std::vector<size_t> files_past_retention(std::span<const RetentionCandidate> files,
                                         const RetentionLimits& limits, std::time_t now) {
  std::vector<size_t> order(files.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return files[a].start < files[b].start; });
  uint64_t total = 0;
  for (const RetentionCandidate& f : files) total += f.bytes;
  const auto max_age = static_cast<std::time_t>(limits.max_age.count());
  std::vector<size_t> out;
  for (size_t i : order) {
    const RetentionCandidate& f = files[i];
    if (f.locked) continue;
    const bool too_old = max_age > 0 && f.start < now - max_age;
    const bool too_much = limits.max_bytes > 0 && total > limits.max_bytes;
    if (!too_old && !too_much) continue;
    out.push_back(i);
    total -= f.bytes;
  }
  return out;
}

}  // namespace rill::record
