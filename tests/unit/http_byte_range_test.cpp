#include "rill/protocol/http_byte_range.h"

#include <gtest/gtest.h>

using rill::protocol::ByteRangeRequest;
using rill::protocol::content_range;
using rill::protocol::parse_byte_range;
using Kind = ByteRangeRequest::Kind;

TEST(HttpByteRange, FirstLast) {
  const auto r = parse_byte_range("bytes=100-199", 1000);
  ASSERT_EQ(r.kind, Kind::Partial);
  EXPECT_EQ(r.first, 100u);
  EXPECT_EQ(r.last, 199u);
  EXPECT_EQ(r.length(), 100u);
  EXPECT_EQ(content_range(r, 1000), "bytes 100-199/1000");
}

TEST(HttpByteRange, OpenEndedAndLastPastTheEnd) {
  auto r = parse_byte_range("bytes=990-", 1000);
  ASSERT_EQ(r.kind, Kind::Partial);
  EXPECT_EQ(r.last, 999u);
  r = parse_byte_range("Bytes=0-5000", 1000);
  ASSERT_EQ(r.kind, Kind::Partial);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, 999u);
}

TEST(HttpByteRange, Suffix) {
  auto r = parse_byte_range("bytes=-10", 1000);
  ASSERT_EQ(r.kind, Kind::Partial);
  EXPECT_EQ(r.first, 990u);
  EXPECT_EQ(r.last, 999u);
  r = parse_byte_range("bytes=-5000", 1000);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(parse_byte_range("bytes=-0", 1000).kind, Kind::Unsatisfiable);
}

TEST(HttpByteRange, Unsatisfiable) {
  const auto r = parse_byte_range("bytes=1000-", 1000);
  EXPECT_EQ(r.kind, Kind::Unsatisfiable);
  EXPECT_EQ(content_range(r, 1000), "bytes */1000");
  EXPECT_EQ(parse_byte_range("bytes=0-", 0).kind, Kind::Unsatisfiable);
}

TEST(HttpByteRange, IgnoredHeadersServeTheWhole) {
  for (const char* h : {"", "items=0-1", "bytes=0-1,5-6", "bytes=5-1", "bytes=a-", "bytes=-", "bytes=1-x"}) {
    EXPECT_EQ(parse_byte_range(h, 1000).kind, Kind::Whole) << h;
  }
}
