#pragma once
// HlsSegmentCache: HLS segments fetched from the owning worker, kept on a worker that does not own
// the stream, so that its clients of one segment cause one fetch. Segments are immutable (the
// bytes behind a segment URI never change while the owner's state lives), so an entry is valid
// until its max-age passes. Bounded in bytes: least recently used entries go first; an object
// larger than the bound is not kept. Knows no clock: callers pass now_ms. One worker thread.
#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>

#include "rill/core/buffer.h"

namespace rill::workers {

class HlsSegmentCache {
 public:
  struct Entry {
    BufferRef data;
    uint32_t max_age_s = 0;  // as the owner sent it (Cache-Control)
    int64_t expire_ms = 0;
  };

  explicit HlsSegmentCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  // A live entry (and marks it recently used), or nullptr. An expired entry is dropped.
  const Entry* find(const std::string& key, int64_t now_ms);
  // Keeps data for max_age_s from now (replacing an entry of the same key); evicts the least
  // recently used entries past the byte bound. False when not kept (too large, or max-age 0).
  bool put(const std::string& key, BufferRef data, uint32_t max_age_s, int64_t now_ms);
  // Drops every expired entry; returns how many.
  size_t prune(int64_t now_ms);

  size_t bytes() const { return bytes_; }
  size_t size() const { return map_.size(); }
  size_t max_bytes() const { return max_bytes_; }
  uint64_t evicted() const { return evicted_; }

 private:
  struct Node {
    std::string key;
    Entry entry;
  };
  using List = std::list<Node>;  // front: most recently used
  void erase(List::iterator it);

  size_t max_bytes_;
  size_t bytes_ = 0;
  uint64_t evicted_ = 0;
  List lru_;
  std::unordered_map<std::string, List::iterator> map_;
};

}  // namespace rill::workers
