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

TEST(HttpConditional, HttpDateInItsThreeFormats) {
  // §5.6.7's three examples of one instant.
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), 784111777);
  EXPECT_EQ(parse_http_date("Thu Dec 10 08:49:37 1970"), 29666977);          // asctime, two-digit day
  EXPECT_EQ(parse_http_date("Friday, 01-Jan-10 00:00:00 GMT"), 1262304000);  // RFC 850 before 70: 20YY
  EXPECT_EQ(parse_http_date(kDate), 1796459400);
  EXPECT_EQ(parse_http_date("Thu, 29 Feb 2024 23:59:59 GMT"), 1709251199);  // a leap day
  EXPECT_EQ(parse_http_date(http_date(4102444800)), 4102444800);            // 2100-01-01
  EXPECT_FALSE(parse_http_date("Thu, 29 Feb 2023 00:00:00 GMT"));           // not a leap year
  EXPECT_FALSE(parse_http_date("Sun, 31 Nov 1994 08:49:37 GMT"));
  EXPECT_FALSE(parse_http_date("Sun, 06 Nov 1994 24:00:00 GMT"));
  EXPECT_FALSE(parse_http_date("Sun, 06 Nov 1994 08:49:37 UTC"));  // GMT only
  EXPECT_FALSE(parse_http_date("Sun, 6 Nov 1994 08:49:37 GMT"));   // day = 2DIGIT
  EXPECT_FALSE(parse_http_date("Sun, 06 Nov 94 08:49:37 GMT"));
  EXPECT_FALSE(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT"));
  EXPECT_FALSE(parse_http_date("Sun Nov 6 08:49:37 1994"));  // asctime pads the day with a space
  EXPECT_FALSE(parse_http_date("1994-11-06T08:49:37Z"));
  EXPECT_FALSE(parse_http_date(""));
}

TEST(HttpConditional, IfModifiedSinceNotLaterThanTheField) {
  EXPECT_TRUE(not_modified_since(kDate, kDate));                               // §13.1.3: "equal to"
  EXPECT_TRUE(not_modified_since("Sat, 05 Dec 2026 08:30:01 GMT", kDate));     // later than modified
  EXPECT_TRUE(not_modified_since("Saturday, 05-Dec-26 08:30:00 GMT", kDate));  // obsolete formats too
  EXPECT_TRUE(not_modified_since("Sat Dec  5 08:30:00 2026", kDate));
  EXPECT_FALSE(not_modified_since("Sat, 05 Dec 2026 08:29:59 GMT", kDate));  // modified since
  EXPECT_FALSE(not_modified_since("not a date", kDate));                     // "MUST ignore"
  EXPECT_FALSE(not_modified_since(kDate, ""));
  EXPECT_FALSE(not_modified_since("", kDate));
}
