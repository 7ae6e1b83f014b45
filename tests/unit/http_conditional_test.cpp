// protocol/http_conditional.h: If-None-Match (weak comparison), If-Range (strong comparison or the
// exact Last-Modified date), the IMF-fixdate.
#include "rill/protocol/http_conditional.h"

#include <gtest/gtest.h>

using namespace rill::protocol;

namespace {
constexpr const char* kTag = "\"1234-56.7\"";
constexpr const char* kDate = "Sat, 05 Dec 2026 08:30:00 GMT";
}  // namespace

TEST(HttpConditional, IfNoneMatchWeakComparison) {
  EXPECT_TRUE(if_none_match("\"1234-56.7\"", kTag));
  EXPECT_TRUE(if_none_match("W/\"1234-56.7\"", kTag));           // §8.8.3.2: W/ ignored
  EXPECT_TRUE(if_none_match(" \"x\" , W/\"1234-56.7\"", kTag));  // a list
  EXPECT_TRUE(if_none_match(",,\"x\",,\"1234-56.7\"", kTag));    // empty elements (§5.6.1)
  EXPECT_TRUE(if_none_match("*", kTag));
  EXPECT_TRUE(if_none_match("\"a,b\", \"1234-56.7\"", kTag));  // a comma inside a tag
  EXPECT_FALSE(if_none_match("\"1234-56.8\"", kTag));
  EXPECT_FALSE(if_none_match("1234-56.7", kTag));                  // not quoted
  EXPECT_FALSE(if_none_match("\"x\" junk, \"1234-56.7\"", kTag));  // a list that does not parse
  EXPECT_FALSE(if_none_match("", kTag));
  EXPECT_FALSE(if_none_match("\"1234-56.7", kTag));
}

TEST(HttpConditional, IfRangeStrongOrExactDate) {
  EXPECT_TRUE(if_range_matches("\"1234-56.7\"", kTag, kDate));
  EXPECT_TRUE(if_range_matches(" \"1234-56.7\" ", kTag, kDate));
  EXPECT_FALSE(if_range_matches("W/\"1234-56.7\"", kTag, kDate));  // §13.1.5: strong comparison
  EXPECT_FALSE(if_range_matches("\"1234-56.8\"", kTag, kDate));
  EXPECT_FALSE(if_range_matches("\"1234-56.7\", \"x\"", kTag, kDate));  // one tag, not a list
  EXPECT_TRUE(if_range_matches(kDate, kTag, kDate));
  EXPECT_FALSE(if_range_matches("Sat, 05 Dec 2026 08:30:01 GMT", kTag, kDate));
  EXPECT_FALSE(if_range_matches(kDate, kTag, ""));
  EXPECT_FALSE(if_range_matches("", kTag, kDate));
  EXPECT_FALSE(if_range_matches("\"1234-56.7\"", "W/\"1234-56.7\"", kDate));  // a weak own tag
}

TEST(HttpConditional, HttpDate) {
  EXPECT_EQ(http_date(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");  // RFC 9110 §5.6.7's example
  EXPECT_EQ(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
}
