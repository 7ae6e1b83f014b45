// LL-HLS Playlist Delivery Directives and the blocking-reload rule (RFC 8216bis §6.2.5).
#include <gtest/gtest.h>

#include "rill/protocol/error.h"
#include "rill/protocol/hls_delivery.h"

using namespace rill::protocol;

TEST(HlsDelivery, ParsesDirectivesAmongOtherParameters) {
  auto d = parse_hls_delivery_directives("token=abc&_HLS_msn=273&_HLS_part=2&_HLS_skip=YES");
  EXPECT_EQ(d.msn, 273u);
  EXPECT_EQ(d.part, 2u);
  EXPECT_TRUE(d.skip);
  EXPECT_TRUE(d.blocking());
  d = parse_hls_delivery_directives("");
  EXPECT_FALSE(d.blocking());
  EXPECT_FALSE(d.part);
  EXPECT_FALSE(d.skip);
  EXPECT_TRUE(parse_hls_delivery_directives("_HLS_skip=v2").skip);
  EXPECT_FALSE(parse_hls_delivery_directives("_HLS_skip=NO").skip);
  EXPECT_EQ(parse_hls_delivery_directives("_HLS_msn=5").msn, 5u);
}

TEST(HlsDelivery, BadRequests) {
  // §6.2.5.2: _HLS_part without _HLS_msn is a bad request; so is a value that is no number.
  for (const char* q : {"_HLS_part=1", "_HLS_msn=", "_HLS_msn=x", "_HLS_msn=-1", "_HLS_msn=1&_HLS_part=1.5",
                        "_HLS_msn=99999999999999999999999"}) {
    EXPECT_THROW(parse_hls_delivery_directives(q), ProtocolError) << q;
  }
}

TEST(HlsDelivery, BlockingVerdict) {
  // Segments 0..9 complete, segment 10 open with 2 parts (0 and 1).
  const HlsProgress p{10, 2, false};
  EXPECT_EQ(hls_block_verdict(p, 9, std::nullopt), HlsBlockVerdict::Ready);
  EXPECT_EQ(hls_block_verdict(p, 10, std::nullopt), HlsBlockVerdict::Wait);  // not complete yet
  EXPECT_EQ(hls_block_verdict(p, 10, 1), HlsBlockVerdict::Ready);
  EXPECT_EQ(hls_block_verdict(p, 10, 2), HlsBlockVerdict::Wait);  // the preload-hinted part
  EXPECT_EQ(hls_block_verdict(p, 9, 7), HlsBlockVerdict::Ready);  // a complete segment has them all
  EXPECT_EQ(hls_block_verdict(p, 11, 0), HlsBlockVerdict::Wait);
  EXPECT_EQ(hls_block_verdict(p, 12, 0), HlsBlockVerdict::Wait);  // last (10) + 2
  EXPECT_EQ(hls_block_verdict(p, 13, 0), HlsBlockVerdict::TooFar);
  // Without a part of the open segment yet, the last listed segment is 9.
  const HlsProgress q{10, 0, false};
  EXPECT_EQ(hls_block_verdict(q, 11, std::nullopt), HlsBlockVerdict::Wait);
  EXPECT_EQ(hls_block_verdict(q, 12, std::nullopt), HlsBlockVerdict::TooFar);
  // Nothing listed yet: segments 0 and 1 may be waited for.
  EXPECT_EQ(hls_block_verdict(HlsProgress{0, 0, false}, 1, 0), HlsBlockVerdict::Wait);
  EXPECT_EQ(hls_block_verdict(HlsProgress{0, 0, false}, 2, 0), HlsBlockVerdict::TooFar);
  // An ended playlist is answered at once: nothing more will come.
  EXPECT_EQ(hls_block_verdict(HlsProgress{10, 0, true}, 11, 0), HlsBlockVerdict::Ready);
}

TEST(HlsDelivery, CacheControlOfEachPolicy) {
  EXPECT_EQ(hls_cache_control(HlsCachePolicy::no_cache()), "no-cache");
  EXPECT_EQ(hls_cache_control(HlsCachePolicy::max_age(3)), "max-age=3");
  EXPECT_EQ(hls_cache_control(HlsCachePolicy::immutable(12)), "max-age=12, immutable");
  EXPECT_EQ(hls_cache_control(HlsCachePolicy{static_cast<HlsCacheKind>(9), 5}), "no-cache");
}
