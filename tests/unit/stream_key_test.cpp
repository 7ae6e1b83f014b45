// The one name rule (media/stream_key.h) and the StreamKey helpers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rill/media/stream_key.h"

using rill::media::is_valid_name;
using rill::media::kMaxNameLength;
using rill::media::name_error;
using rill::media::split_query;
using rill::media::StreamKey;

// The table every protocol must agree on (tests/integration/test_stream_names.py uses the same).
TEST(StreamKey, NameRuleTable) {
  const std::string longest(kMaxNameLength, 'a');
  for (const std::string& good : std::vector<std::string>{"live", "cam1", "a", "A-Z_0.9~x", ".hidden", "a.b", "x.", "~", longest}) {
    EXPECT_TRUE(is_valid_name(good)) << good;
  }
  for (const std::string& bad : std::vector<std::string>{"", ".", "..", "...", "a..b", "x..", "a/b", "a b", "a?b", "a%2e", "caf\xc3\xa9", "a\\b", "a\nb",
                                std::string("a\0b", 3), longest + "a", "<x>", "a+b"}) {
    EXPECT_FALSE(is_valid_name(bad)) << bad;
  }
}

TEST(StreamKey, ErrorsSayWhy) {
  EXPECT_EQ(*name_error(""), "empty");
  EXPECT_EQ(*name_error(".."), "'.' and '..' are not allowed");
  EXPECT_EQ(*name_error(std::string(kMaxNameLength + 1, 'x')), "longer than 128 bytes");
  EXPECT_EQ(*name_error("a/b"), "character 0x2f not allowed");
  EXPECT_FALSE(name_error("ok").has_value());
}

TEST(StreamKey, MakeAndParse) {
  std::string why;
  auto k = StreamKey::make("live", "cam", &why);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->str(), "live/cam");
  EXPECT_FALSE(StreamKey::make("live", "..", &why));
  EXPECT_EQ(why, "invalid stream name: '.' and '..' are not allowed");
  EXPECT_FALSE(StreamKey::make("", "cam", &why));
  EXPECT_EQ(why, "invalid app name: empty");
  auto p = StreamKey::parse("live/cam");
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, (StreamKey{"live", "cam"}));
  EXPECT_FALSE(StreamKey::parse("livecam", &why));
  EXPECT_EQ(why, "expected APP/NAME");
  EXPECT_FALSE(StreamKey::parse("live/a/b"));
  EXPECT_LT((StreamKey{"a", "z"}), (StreamKey{"b", "a"}));
}

TEST(StreamKey, SplitQueryKeepsTheQuery) {
  auto a = split_query("cam?token=abc&x=1");
  EXPECT_EQ(a.name, "cam");
  EXPECT_EQ(a.query, "token=abc&x=1");
  auto b = split_query("live/");
  EXPECT_EQ(b.name, "live");
  EXPECT_EQ(b.query, "");
  auto c = split_query("live/?t=1");
  EXPECT_EQ(c.name, "live");
  EXPECT_EQ(c.query, "t=1");
}
