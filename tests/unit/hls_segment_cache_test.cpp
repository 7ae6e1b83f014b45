// HlsSegmentCache (workers/hls_segment_cache.h): bounded by bytes (LRU) and by max-age.
#include <gtest/gtest.h>

#include <string>

#include "rill/workers/hls_segment_cache.h"

namespace rill::workers {
namespace {

BufferRef bytes(size_t n, char c = 'x') { return SharedBuffer::copy_of(std::string(n, c)); }

TEST(HlsSegmentCache, HitUntilMaxAge) {
  HlsSegmentCache c(1000);
  EXPECT_EQ(c.find("a", 0), nullptr);
  EXPECT_TRUE(c.put("a", bytes(10, 'a'), 3, 1000));
  const auto* e = c.find("a", 3999);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->data->view(), std::string(10, 'a'));
  EXPECT_EQ(e->max_age_s, 3u);
  EXPECT_EQ(c.find("a", 4000), nullptr);  // expired: dropped
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.bytes(), 0u);
}

TEST(HlsSegmentCache, BoundedInBytesLeastRecentlyUsedFirst) {
  HlsSegmentCache c(100);
  EXPECT_TRUE(c.put("a", bytes(40), 60, 0));
  EXPECT_TRUE(c.put("b", bytes(40), 60, 0));
  ASSERT_NE(c.find("a", 1), nullptr);  // a is now the most recently used
  EXPECT_TRUE(c.put("c", bytes(40), 60, 2));
  EXPECT_EQ(c.bytes(), 80u);
  EXPECT_NE(c.find("a", 3), nullptr);
  EXPECT_EQ(c.find("b", 3), nullptr);  // evicted
  EXPECT_NE(c.find("c", 3), nullptr);
  EXPECT_EQ(c.evicted(), 1u);
  EXPECT_FALSE(c.put("huge", bytes(101), 60, 3));  // larger than the bound: not kept
  EXPECT_FALSE(c.put("zero", bytes(1), 0, 3));     // max-age 0: not kept
  EXPECT_EQ(c.bytes(), 80u);
  EXPECT_TRUE(c.put("a", bytes(10), 60, 4));  // replaces
  EXPECT_EQ(c.bytes(), 50u);
  EXPECT_EQ(c.size(), 2u);
}

TEST(HlsSegmentCache, PruneDropsExpiredAndFreesBytes) {
  HlsSegmentCache c(1000);
  c.put("a", bytes(10), 1, 0);
  c.put("b", bytes(20), 5, 0);
  c.put("c", bytes(30), 2, 0);
  EXPECT_EQ(c.prune(2000), 2u);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.bytes(), 20u);
  // Expired entries do not count against the bound for a new one.
  HlsSegmentCache d(50);
  d.put("old", bytes(40), 1, 0);
  EXPECT_TRUE(d.put("new", bytes(40), 1, 1000));
  EXPECT_EQ(d.evicted(), 0u);
  EXPECT_EQ(d.size(), 1u);
}

}  // namespace
}  // namespace rill::workers
