#include "rill/workers/hls_segment_cache.h"

namespace rill::workers {

void HlsSegmentCache::erase(List::iterator it) {
  bytes_ -= it->entry.data.size();
  map_.erase(it->key);
  lru_.erase(it);
}

const HlsSegmentCache::Entry* HlsSegmentCache::find(const std::string& key, int64_t now_ms) {
  auto m = map_.find(key);
  if (m == map_.end()) return nullptr;
  List::iterator it = m->second;
  if (it->entry.expire_ms <= now_ms) {
    erase(it);
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it);
  return &it->entry;
}

bool HlsSegmentCache::put(const std::string& key, BufferRef data, uint32_t max_age_s, int64_t now_ms) {
  if (auto m = map_.find(key); m != map_.end()) erase(m->second);
  const size_t n = data.size();
  if (max_age_s == 0 || n > max_bytes_) return false;
  prune(now_ms);
  while (!lru_.empty() && bytes_ + n > max_bytes_) {
    erase(std::prev(lru_.end()));
    ++evicted_;
  }
  lru_.push_front(Node{key, Entry{std::move(data), max_age_s, now_ms + int64_t{max_age_s} * 1000}});
  map_[key] = lru_.begin();
  bytes_ += n;
  return true;
}

size_t HlsSegmentCache::prune(int64_t now_ms) {
  size_t dropped = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->entry.expire_ms <= now_ms) {
      erase(it);
      ++dropped;
    }
    it = next;
  }
  return dropped;
}

}  // namespace rill::workers
