#include "rill/protocol/stream_token.h"

#include <gtest/gtest.h>

#include "rill/protocol/hls_uri_query.h"
#include "rill/protocol/query_string.h"

using namespace rill::protocol;

// Vectors computed with `openssl dgst -sha256 -hmac KEY` (docs/security.md, the shell recipe).
TEST(StreamToken, KnownVectors) {
  EXPECT_EQ(hmac_sha256_hex("key", "The quick brown fox jumps over the lazy dog"),
            "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
  EXPECT_EQ(token_sign("k3y", "publish", "live", "cam1", 1767225600),
            "c4014c6110d4998fc89e504c2ace22fa0dac28263648870c663839a269f1d47f");
  EXPECT_EQ(token_sign("k3y", "play", "live", "cam1", 1767225600),
            "d3ed3c689539387e0e0437e020512e74f88419d63cf4b39f293f7c92d3e2805d");
  EXPECT_EQ(token_query("k3y", "play", "live", "cam1", 1767225600),
            "expires=1767225600&sign=d3ed3c689539387e0e0437e020512e74f88419d63cf4b39f293f7c92d3e2805d");
}

TEST(StreamToken, VerifiesAndRefuses) {
  const int64_t now = 1767225000;
  const std::string good = token_query("k3y", "publish", "live", "cam1", 1767225600);
  EXPECT_EQ(verify_token("k3y", "publish", "live", "cam1", good, now), std::nullopt);
  EXPECT_EQ(verify_token("k3y", "publish", "live", "cam1", "x=1&" + good + "&y=2", now), std::nullopt);
  EXPECT_EQ(verify_token("k3y", "publish", "live", "cam1", good, 1767225600), std::nullopt);  // last second
  auto refusal = [&](std::string_view secret, std::string_view action, std::string_view name, const std::string& q,
                     int64_t at) { return verify_token(secret, action, "live", name, q, at).value_or("ADMITTED"); };
  EXPECT_NE(refusal("k3y", "publish", "cam1", good, 1767225601).find("expired"), std::string::npos);
  EXPECT_NE(refusal("k3y", "play", "cam1", good, now).find("wrong sign"), std::string::npos);      // other action
  EXPECT_NE(refusal("k3y", "publish", "cam2", good, now).find("wrong sign"), std::string::npos);   // other name
  EXPECT_NE(refusal("other", "publish", "cam1", good, now).find("wrong sign"), std::string::npos); // other key
  EXPECT_NE(refusal("k3y", "publish", "cam1", "", now).find("no token"), std::string::npos);
  EXPECT_NE(refusal("k3y", "publish", "cam1", "expires=1767225600", now).find("without sign"), std::string::npos);
  EXPECT_NE(refusal("k3y", "publish", "cam1", "sign=ab", now).find("without expires"), std::string::npos);
  EXPECT_NE(refusal("k3y", "publish", "cam1", "expires=-5&sign=ab", now).find("malformed"), std::string::npos);
  EXPECT_NE(refusal("k3y", "publish", "cam1", "expires=99999999999999999999&sign=ab", now).find("malformed"),
            std::string::npos);
  // An upper-case sign is not the lowercase hex of the recipe.
  std::string upper = good;
  for (size_t i = upper.find("sign=") + 5; i < upper.size(); ++i) upper[i] = static_cast<char>(toupper(upper[i]));
  EXPECT_NE(refusal("k3y", "publish", "cam1", upper, now).find("wrong sign"), std::string::npos);
  const std::string oversized = good + "&pad=" + std::string(1100, 'a');
  EXPECT_NE(refusal("k3y", "publish", "cam1", oversized, now).find("longer than 1024"), std::string::npos);
}

TEST(StreamToken, TokenPartForSegments) {
  EXPECT_EQ(token_part_of("a=1&expires=5&b=2&sign=ab12"), "expires=5&sign=ab12");
  EXPECT_EQ(token_part_of("expires=5"), "");
  EXPECT_EQ(token_part_of(""), "");
  EXPECT_EQ(token_part_of("expires=5&sign=a\"b"), "");  // never anything unsafe in a playlist
  EXPECT_EQ(token_part_of("expires=5&sign=a%0Ab"), "expires=5&sign=a%0Ab");
}

TEST(QueryString, ParsesAndEncodes) {
  const QueryParams p = parse_query("a=1&&b=x%20y+z&flag&c=%zz&=e&d=");
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ(p[1].second, "x y z");
  EXPECT_EQ(p[2], (std::pair<std::string, std::string>{"flag", ""}));
  EXPECT_EQ(p[3].second, "%zz");
  EXPECT_EQ(p[4].first, "");
  EXPECT_EQ(*query_value(p, "d"), "");
  EXPECT_EQ(query_value(p, "zz"), nullptr);
  EXPECT_EQ(encode_form({{"call", "publish"}, {"tcurl", "rtmp://h:1/live"}, {"x y", "a&b=c"}}),
            "call=publish&tcurl=rtmp%3A%2F%2Fh%3A1%2Flive&x%20y=a%26b%3Dc");
  std::string back;
  EXPECT_TRUE(percent_decode(percent_encode("\x01 ~é"), back, PercentDecoding::Form));
  EXPECT_EQ(back, "\x01 ~é");
}

// One decoder, two strictnesses (protocol/percent_coding.h).
TEST(PercentCoding, StrictRefusesWhatFormKeeps) {
  std::string out;
  for (std::string_view bad : {"%", "%4", "%zz", "a%4g", "%00", "x%"}) {
    EXPECT_FALSE(percent_decode(bad, out, PercentDecoding::Strict)) << bad;
    EXPECT_TRUE(percent_decode(bad, out, PercentDecoding::Form)) << bad;
  }
  ASSERT_TRUE(percent_decode("%zz+%41%", out, PercentDecoding::Form));
  EXPECT_EQ(out, "%zz A%");
  ASSERT_TRUE(percent_decode("a+b%2B%2fc", out));  // Strict: '+' is a plus
  EXPECT_EQ(out, "a+b+/c");
  ASSERT_TRUE(percent_decode("%00", out, PercentDecoding::Form));
  EXPECT_EQ(out, std::string(1, '\0'));
  EXPECT_EQ(hex_digit_value('f'), 15);
  EXPECT_EQ(hex_digit_value('F'), 15);
  EXPECT_EQ(hex_digit_value('g'), -1);
}

TEST(HlsUriQuery, AppendsToEveryUri) {
  const std::string playlist =
      "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.000,\ncam/1.ts\n#EXTINF:2.000,\ncam/2.ts?x=1\n";
  EXPECT_EQ(playlist_with_uri_query(playlist, "expires=5&sign=ab"),
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.000,\ncam/1.ts?expires=5&sign=ab\n#EXTINF:2.000,\n"
            "cam/2.ts?x=1&expires=5&sign=ab\n");
  EXPECT_EQ(playlist_with_uri_query("#A\r\nx.ts\r\n\r\n", "q=1"), "#A\r\nx.ts?q=1\r\n\r\n");
  EXPECT_EQ(playlist_with_uri_query(playlist, ""), playlist);
  // fMP4 / LL-HLS: the init section, parts and hinted parts are fetched by URI attribute.
  EXPECT_EQ(playlist_with_uri_query("#EXT-X-MAP:URI=\"init.mp4\"\n"
                                    "#EXT-X-PART:DURATION=0.2,URI=\"5.0.m4s\",INDEPENDENT=YES\n"
                                    "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"5.1.m4s?x=1\"\n"
                                    "#EXT-X-KEY:METHOD=NONE,XURI=\"no\"\n5.m4s\n",
                                    "q=1"),
            "#EXT-X-MAP:URI=\"init.mp4?q=1\"\n"
            "#EXT-X-PART:DURATION=0.2,URI=\"5.0.m4s?q=1\",INDEPENDENT=YES\n"
            "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"5.1.m4s?x=1&q=1\"\n"
            "#EXT-X-KEY:METHOD=NONE,XURI=\"no\"\n5.m4s?q=1\n");
}
