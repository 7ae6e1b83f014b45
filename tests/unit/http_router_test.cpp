// HttpRouter: the pure mapping of a request target onto what Rill serves (health, HTTP-FLV,
// HLS playlist, HLS segment), and the checks that keep traversal and odd bytes out of lookups.
#include "rill/server/http_router.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

using rill::server::HttpRoute;
using rill::server::HttpRouterLimits;
using rill::server::percent_decode;
using rill::server::route_http;
using Kind = rill::server::HttpRoute::Kind;

namespace {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::NotFound: return "NotFound";
    case Kind::BadRequest: return "BadRequest";
    case Kind::Health: return "Health";
    case Kind::Flv: return "Flv";
    case Kind::HlsPlaylist: return "HlsPlaylist";
    case Kind::HlsSegment: return "HlsSegment";
  }
  return "?";
}

::testing::AssertionResult IsKind(std::string_view uri, Kind want, const HttpRouterLimits& lim = {}) {
  HttpRoute r = route_http(uri, lim);
  if (r.kind == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "route_http(\"" << std::string(uri).substr(0, 120) << "\") = "
                                       << kind_name(r.kind) << " (error '" << r.error << "', app '" << r.app
                                       << "', stream '" << r.stream << "'), want " << kind_name(want);
}

// A BadRequest whose reason mentions `why`.
::testing::AssertionResult IsBad(std::string_view uri, std::string_view why = "",
                                 const HttpRouterLimits& lim = {}) {
  HttpRoute r = route_http(uri, lim);
  if (r.kind != Kind::BadRequest)
    return ::testing::AssertionFailure() << "route_http(\"" << std::string(uri).substr(0, 120) << "\") = "
                                         << kind_name(r.kind) << " (app '" << r.app << "', stream '" << r.stream
                                         << "'), want BadRequest";
  if (r.error.empty()) return ::testing::AssertionFailure() << "BadRequest without a reason";
  if (!why.empty() && r.error.find(why) == std::string::npos)
    return ::testing::AssertionFailure() << "reason '" << r.error << "' does not mention '" << why << "'";
  return ::testing::AssertionSuccess();
}

// Not served: neither a route nor a lookup (NotFound or BadRequest both qualify).
::testing::AssertionResult IsRejected(std::string_view uri) {
  HttpRoute r = route_http(uri);
  if (r.kind == Kind::NotFound || r.kind == Kind::BadRequest) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "route_http(\"" << std::string(uri).substr(0, 120) << "\") = "
                                       << kind_name(r.kind) << " (app '" << r.app << "', stream '" << r.stream
                                       << "'), want NotFound or BadRequest";
}

std::string decoded(std::string_view in) {
  std::string out;
  EXPECT_TRUE(percent_decode(in, out)) << in;
  return out;
}

bool decode_fails(std::string_view in) {
  std::string out;
  return !percent_decode(in, out);
}

}  // namespace

// ---- every route kind --------------------------------------------------------------------

TEST(HttpRouter, Health) {
  HttpRoute r = route_http("/healthz");
  EXPECT_EQ(r.kind, Kind::Health);
  EXPECT_TRUE(r.app.empty());
  EXPECT_TRUE(r.stream.empty());
  EXPECT_TRUE(r.error.empty());
  EXPECT_TRUE(IsKind("/healthz?verbose=1", Kind::Health));
  EXPECT_TRUE(IsKind("/healthz/", Kind::NotFound));
  EXPECT_TRUE(IsKind("/healthz/x", Kind::NotFound));
  EXPECT_TRUE(IsKind("/HEALTHZ", Kind::NotFound));
  EXPECT_TRUE(IsKind("/health", Kind::NotFound));
}

TEST(HttpRouter, Flv) {
  HttpRoute r = route_http("/live/test.flv");
  EXPECT_EQ(r.kind, Kind::Flv);
  EXPECT_EQ(r.app, "live");
  EXPECT_EQ(r.stream, "test");
  EXPECT_EQ(r.segment, 0u);
  EXPECT_TRUE(r.error.empty());
}

TEST(HttpRouter, HlsPlaylist) {
  HttpRoute r = route_http("/live/test.m3u8");
  EXPECT_EQ(r.kind, Kind::HlsPlaylist);
  EXPECT_EQ(r.app, "live");
  EXPECT_EQ(r.stream, "test");
  EXPECT_TRUE(r.error.empty());
}

TEST(HttpRouter, HlsSegment) {
  HttpRoute r = route_http("/live/test/42.ts");
  EXPECT_EQ(r.kind, Kind::HlsSegment);
  EXPECT_EQ(r.app, "live");
  EXPECT_EQ(r.stream, "test");
  EXPECT_EQ(r.segment, 42u);
  EXPECT_TRUE(r.error.empty());
  EXPECT_EQ(route_http("/live/test/0.ts").segment, 0u);
  EXPECT_EQ(route_http("/live/test/007.ts").segment, 7u);
}

TEST(HttpRouter, NotFound) {
  for (const char* uri : {"/", "/live", "/live/", "/live/test", "/live/test.mp4", "/live/test.FLV", "/live/test.flvx",
                          "/live/test.ts", "/live/test/1.flv", "/live/test/1.m3u8", "/a/b/c/1.ts", "/a/b/c/d/e.flv",
                          "/favicon.ico", "/live/test/1", "/live/test/seg.ts.bak"}) {
    EXPECT_TRUE(IsKind(uri, Kind::NotFound)) << uri;
  }
  HttpRoute r = route_http("/nothing/here");
  EXPECT_TRUE(r.error.empty());
  EXPECT_TRUE(r.app.empty());
}

TEST(HttpRouter, SuffixOnlyTheLastOne) {
  // "test.flv.m3u8" is the playlist of the stream "test.flv" (a legal name).
  HttpRoute r = route_http("/live/test.flv.m3u8");
  EXPECT_EQ(r.kind, Kind::HlsPlaylist);
  EXPECT_EQ(r.stream, "test.flv");
  r = route_http("/live/a.m3u8.flv");
  EXPECT_EQ(r.kind, Kind::Flv);
  EXPECT_EQ(r.stream, "a.m3u8");
}

// ---- names ---------------------------------------------------------------------------------

TEST(HttpRouter, NamesWithEveryAllowedCharacter) {
  HttpRoute r = route_http("/My-App_1.0~x/Str_e-a.m~9Z.flv");
  ASSERT_EQ(r.kind, Kind::Flv) << r.error;
  EXPECT_EQ(r.app, "My-App_1.0~x");
  EXPECT_EQ(r.stream, "Str_e-a.m~9Z");

  r = route_http("/a/b.m3u8");
  EXPECT_EQ(r.kind, Kind::HlsPlaylist);
  EXPECT_EQ(r.app, "a");
  EXPECT_EQ(r.stream, "b");

  r = route_http("/0/9/18446744073709551615.ts");
  ASSERT_EQ(r.kind, Kind::HlsSegment);
  EXPECT_EQ(r.app, "0");
  EXPECT_EQ(r.stream, "9");
  EXPECT_EQ(r.segment, 18446744073709551615ull);

  // A single dot inside a name is fine; names may start or end with one as long as it is not "..".
  r = route_http("/live/.hidden.flv");
  EXPECT_EQ(r.kind, Kind::Flv);
  EXPECT_EQ(r.stream, ".hidden");
}

TEST(HttpRouter, PercentEncodedAllowedCharactersAreDecoded) {
  HttpRoute r = route_http("/li%76e/te%73%74.flv");
  ASSERT_EQ(r.kind, Kind::Flv) << r.error;
  EXPECT_EQ(r.app, "live");
  EXPECT_EQ(r.stream, "test");
  r = route_http("/live/a%2Db%5Fc%7E.flv");  // '-', '_', '~'
  ASSERT_EQ(r.kind, Kind::Flv) << r.error;
  EXPECT_EQ(r.stream, "a-b_c~");
}

TEST(HttpRouter, NamesWithForbiddenCharactersAreBadRequests) {
  for (const char* uri : {"/live/te st.flv", "/live/te%20st.flv", "/live/a+b.flv", "/live/a:b.flv", "/live/a@b.flv",
                          "/live/a'b.flv", "/live/a\"b.flv", "/live/a<b>.flv", "/live/a%3bb.flv", "/live/t%c3%a9st.flv",
                          "/liv%24e/test.flv", "/live/a*b.m3u8", "/li ve/test/1.ts", "/live/st%21/1.ts",
                          "/live/\xff.flv"}) {
    EXPECT_TRUE(IsBad(uri, "invalid app or stream name")) << uri;
  }
}

TEST(HttpRouter, EmptyNamesAreBadRequests) {
  EXPECT_TRUE(IsBad("/live/.flv"));
  EXPECT_TRUE(IsBad("/live/.m3u8"));
}

TEST(HttpRouter, NameLengthLimit) {
  std::string ok(128, 'a'), too_long(129, 'a');
  HttpRoute r = route_http("/live/" + ok + ".flv");
  EXPECT_EQ(r.kind, Kind::Flv);
  EXPECT_EQ(r.stream, ok);
  EXPECT_TRUE(IsBad("/live/" + too_long + ".flv", "invalid app or stream name"));
  EXPECT_TRUE(IsBad("/" + too_long + "/test.flv", "invalid app or stream name"));
  EXPECT_TRUE(IsBad("/live/" + too_long + "/1.ts", "invalid app or stream name"));

}

// ---- traversal -----------------------------------------------------------------------------

TEST(HttpRouter, DotDotIsRejected) {
  for (const char* uri : {"/live/../x.flv", "/../live/x.flv", "/live/x/../../y.ts", "/live/..", "/..", "/../etc/passwd",
                          "/live/test/../1.ts", "/live/./test.flv", "/./live/test.flv"}) {
    EXPECT_TRUE(IsBad(uri, "traversal")) << uri;
  }
  // ".." inside a name or as the name of the stream is never a valid name.
  for (const char* uri : {"/live/..flv", "/live/...flv", "/live/a..b.flv", "/..x/test.flv", "/live/x../1.ts",
                          "/../1.ts", "/live/...m3u8"}) {
    EXPECT_TRUE(IsRejected(uri)) << uri;
  }
  EXPECT_TRUE(IsBad("/live/a..b.flv", "invalid app or stream name"));
  EXPECT_TRUE(IsBad("/live/..flv", "invalid app or stream name"));
}

TEST(HttpRouter, EncodedDotDotIsRejected) {
  for (const char* uri : {"/live/%2e%2e/x.flv", "/live/%2E%2E/x.flv", "/%2e%2e/live/x.flv", "/live/.%2e/x.flv",
                          "/live/%2e./x.flv", "/live/test/%2e%2e/1.ts", "/live/%2e%2e", "/live/%2e/x.flv"}) {
    EXPECT_TRUE(IsBad(uri, "traversal")) << uri;
  }
  EXPECT_TRUE(IsBad("/live/%2e%2e.flv", "invalid app or stream name"));
  EXPECT_TRUE(IsBad("/live/a%2e%2eb.flv", "invalid app or stream name"));
  EXPECT_TRUE(IsBad("/%2e%2e/x.flv", "traversal"));
}

TEST(HttpRouter, EncodedSlashNeverEndsUpInAName) {
  // %2f decodes to '/', so it splits segments like a plain slash; it can smuggle neither a
  // slash nor a traversal into a name.
  for (const char* uri : {"/live/a%2f..%2fb.flv", "/live/a%2F..%2Fb.flv", "/live%2f..%2fsecret.flv",
                          "/live/%2f%2e%2e%2fetc.flv", "/live/x%2f%2e%2e/1.ts"}) {
    HttpRoute r = route_http(uri);
    EXPECT_EQ(r.kind, Kind::BadRequest) << uri << ": " << kind_name(r.kind);
  }
  HttpRoute r = route_http("/live/a%2fb.flv");  // three segments, the last not .ts
  EXPECT_EQ(r.kind, Kind::NotFound);
  EXPECT_TRUE(IsBad("/live/%2f/x.flv", "empty path segment"));
  for (const char* uri : {"/live%2ftest.flv", "/live/a%2fb.flv", "/live/a%2fb%2f1.ts", "/a%2Fb/c.m3u8"}) {
    HttpRoute q = route_http(uri);
    EXPECT_EQ(q.app.find('/'), std::string::npos) << uri;
    EXPECT_EQ(q.stream.find('/'), std::string::npos) << uri;
  }
}

TEST(HttpRouter, EncodedNulIsRejected) {
  EXPECT_TRUE(IsBad("/live/test%00.flv", "percent"));
  EXPECT_TRUE(IsBad("/live/%00/x.flv", "percent"));
  EXPECT_TRUE(IsBad("/healthz%00", "percent"));
}

TEST(HttpRouter, BackslashIsRejected) {
  EXPECT_TRUE(IsBad("/live/a\\b.flv", "backslash"));
  EXPECT_TRUE(IsBad("/live\\..\\x.flv", "backslash"));
  EXPECT_TRUE(IsBad("/live/a%5cb.flv", "backslash"));
  EXPECT_TRUE(IsBad("/live/%5C..%5Cx.flv", "backslash"));
}

TEST(HttpRouter, ControlCharactersAreRejected) {
  for (std::string uri : {std::string("/live/a\x01" "b.flv"), std::string("/live/a\tb.flv"), std::string("/live/a\rb.flv"),
                          std::string("/live/a\nb.flv"), std::string("/live/a\x1f.flv"), std::string("/live/a\x7f.flv"),
                          std::string("/live/a%0ab.flv"), std::string("/live/a%0D%0Ab.flv"), std::string("/live/a%1fb.flv"),
                          std::string("/live/a%7Fb.flv"), std::string("/healthz%09")}) {
    EXPECT_TRUE(IsBad(uri, "control character")) << uri;
  }
  // A raw NUL inside the view (not percent-encoded) is a control character too.
  std::string nul = "/live/a";
  nul.push_back('\0');
  nul += "b.flv";
  EXPECT_TRUE(IsBad(nul, "control character"));
}

TEST(HttpRouter, DoubleSlashesAreRejected) {
  for (const char* uri : {"//live/test.flv", "/live//test.flv", "/live/test//1.ts", "//healthz", "//", "///"}) {
    EXPECT_TRUE(IsBad(uri, "empty path segment")) << uri;
  }
}

TEST(HttpRouter, TrailingSlashIsNotFound) {
  for (const char* uri : {"/live/test.flv/", "/live/test.m3u8/", "/live/test/1.ts/", "/live/", "/healthz/"}) {
    EXPECT_TRUE(IsKind(uri, Kind::NotFound)) << uri;
  }
}

TEST(HttpRouter, TargetMustBeAnOriginFormPath) {
  for (const char* uri : {"", "live/test.flv", "*", "http://127.0.0.1/live/test.flv", "?x=1", "#frag"}) {
    EXPECT_TRUE(IsBad(uri, "start with '/'")) << uri;
  }
}

// ---- lengths -------------------------------------------------------------------------------

TEST(HttpRouter, OverLongPath) {
  HttpRouterLimits lim;  // max_path 1024
  // Exactly at the limit: not rejected for its length (it is simply not a route).
  std::string at_limit = "/" + std::string(lim.max_path - 1, 'a');
  ASSERT_EQ(at_limit.size(), lim.max_path);
  HttpRoute r = route_http(at_limit);
  EXPECT_EQ(r.error.find("longer than"), std::string::npos) << r.error;
  EXPECT_TRUE(IsBad(at_limit + "a", "longer than"));
  EXPECT_TRUE(IsBad("/live/" + std::string(5000, 'x') + ".flv", "longer than"));
  EXPECT_TRUE(IsBad("/live/test.flv" + std::string(100000, '/'), "longer than"));
  // The path limit applies before decoding: 400 "%41" are 1200 bytes.
  std::string enc = "/";
  for (int i = 0; i < 400; ++i) enc += "%41";
  EXPECT_TRUE(IsBad(enc, "longer than"));
  EXPECT_NE(route_http(at_limit + "a").error.find("1024"), std::string::npos);
}

TEST(HttpRouter, OverLongQuery) {
  HttpRouterLimits lim;  // max_query 2048
  EXPECT_TRUE(IsKind("/live/test.flv?" + std::string(lim.max_query, 'q'), Kind::Flv));
  EXPECT_TRUE(IsBad("/live/test.flv?" + std::string(lim.max_query + 1, 'q'), "longer than"));
  EXPECT_TRUE(IsBad("/live/test.flv?" + std::string(100 * 1024, 'q'), "longer than"));
  EXPECT_TRUE(IsBad("/healthz?" + std::string(100 * 1024, 'q'), "longer than"));
  EXPECT_NE(route_http("/x?" + std::string(5000, 'q')).error.find("query"), std::string::npos);
}

TEST(HttpRouter, CustomLimits) {
  HttpRouterLimits lim;
  lim.max_path = 16;
  lim.max_query = 4;
  EXPECT_TRUE(IsKind("/live/abcdef.flv", Kind::Flv, lim));                 // 16 bytes
  EXPECT_TRUE(IsBad("/live/abcdefg.flv", "longer than 16", lim));          // 17 bytes
  EXPECT_TRUE(IsKind("/live/a.flv?abcd", Kind::Flv, lim));
  EXPECT_TRUE(IsBad("/live/a.flv?abcde", "longer than 4", lim));
}

// ---- percent-encoding ----------------------------------------------------------------------

TEST(HttpRouter, BadPercentEscapesAreBadRequests) {
  for (const char* uri : {"/live/test.flv%", "/live/test.flv%4", "/live/%zz.flv", "/live/%g0.flv", "/live/%0g.flv",
                          "/live/%%41.flv", "/%", "/live/te%-1st.flv", "/live/te% 1st.flv", "/live/a%2"}) {
    EXPECT_TRUE(IsBad(uri, "percent")) << uri;
  }
  // A bad escape in the query is not the router's business.
  EXPECT_TRUE(IsKind("/live/test.flv?a=%zz&b=%", Kind::Flv));
}

TEST(HttpRouter, PercentDecode) {
  EXPECT_EQ(decoded(""), "");
  EXPECT_EQ(decoded("abc"), "abc");
  EXPECT_EQ(decoded("%41"), "A");
  EXPECT_EQ(decoded("a%41b"), "aAb");
  EXPECT_EQ(decoded("%61%62%63"), "abc");
  EXPECT_EQ(decoded("%2e%2E"), "..");
  EXPECT_EQ(decoded("%2f%2F"), "//");
  EXPECT_EQ(decoded("%e2%82%AC"), "\xe2\x82\xac");
  EXPECT_EQ(decoded("%ff"), "\xff");
  EXPECT_EQ(decoded("+"), "+");  // not form-encoding: '+' stays
  EXPECT_EQ(decoded("%2541"), "%41");  // decoded once only
  EXPECT_EQ(decoded("ab%20"), "ab ");  // an escape at the very end

  EXPECT_TRUE(decode_fails("%"));
  EXPECT_TRUE(decode_fails("%4"));
  EXPECT_TRUE(decode_fails("a%"));
  EXPECT_TRUE(decode_fails("a%4"));
  EXPECT_TRUE(decode_fails("%zz"));
  EXPECT_TRUE(decode_fails("%4z"));
  EXPECT_TRUE(decode_fails("%z4"));
  EXPECT_TRUE(decode_fails("%00"));
  EXPECT_TRUE(decode_fails("abc%00def"));
  EXPECT_TRUE(decode_fails("% 41"));

  // The output is replaced, not appended to.
  std::string out = "stale";
  ASSERT_TRUE(percent_decode("x", out));
  EXPECT_EQ(out, "x");
}

// ---- HLS segment numbers -------------------------------------------------------------------

TEST(HttpRouter, SegmentNumbers) {
  EXPECT_EQ(route_http("/live/test/18446744073709551615.ts").segment, 18446744073709551615ull);
  // Overflow, signs, non-digits, empty: not a segment.
  for (const char* uri : {"/live/test/18446744073709551616.ts", "/live/test/99999999999999999999999999.ts",
                          "/live/test/-1.ts", "/live/test/+1.ts", "/live/test/1a.ts", "/live/test/a1.ts",
                          "/live/test/0x10.ts", "/live/test/1.5.ts", "/live/test/1e3.ts", "/live/test/.ts",
                          "/live/test/ 1.ts", "/live/test/%20%31.ts", "/live/test/seg-1.ts"}) {
    EXPECT_TRUE(IsRejected(uri)) << uri;
    EXPECT_NE(route_http(uri).kind, Kind::HlsSegment) << uri;
  }
  EXPECT_TRUE(IsKind("/live/test/18446744073709551616.ts", Kind::NotFound));
  EXPECT_TRUE(IsKind("/live/test/abc.ts", Kind::NotFound));
  // Encoded digits are digits.
  HttpRoute r = route_http("/live/test/%31%32.ts");
  EXPECT_EQ(r.kind, Kind::HlsSegment);
  EXPECT_EQ(r.segment, 12u);
  // The names of a segment route are checked like any other.
  EXPECT_TRUE(IsBad("/li.ve../test/1.ts", "invalid app or stream name"));
  EXPECT_TRUE(IsBad("/live/te st/1.ts", "invalid app or stream name"));
}

// ---- query strings and fragments -----------------------------------------------------------

TEST(HttpRouter, QueryStringIsIgnoredForRouting) {
  for (const char* uri : {"/live/test.flv?token=abc", "/live/test.flv?", "/live/test.flv?a=1&b=2",
                          "/live/test.flv?x=../../etc/passwd", "/live/test.flv?x=%00%zz\\", "/live/test.flv?/other.m3u8",
                          "/live/test.flv??", "/live/test.flv?a/b/c.ts"}) {
    HttpRoute r = route_http(uri);
    EXPECT_EQ(r.kind, Kind::Flv) << uri << ": " << kind_name(r.kind) << " " << r.error;
    EXPECT_EQ(r.app, "live") << uri;
    EXPECT_EQ(r.stream, "test") << uri;
  }
  HttpRoute r = route_http("/live/test/5.ts?_HLS_msn=3");
  EXPECT_EQ(r.kind, Kind::HlsSegment);
  EXPECT_EQ(r.segment, 5u);
  EXPECT_EQ(route_http("/live/test.m3u8?t=1").kind, Kind::HlsPlaylist);
  // An encoded '?' is part of the path, not a query.
  EXPECT_TRUE(IsBad("/live/test%3f.flv", "invalid app or stream name"));
}

TEST(HttpRouter, FragmentIsIgnored) {
  HttpRoute r = route_http("/live/test.flv#t=10");
  EXPECT_EQ(r.kind, Kind::Flv);
  EXPECT_EQ(r.stream, "test");
  EXPECT_EQ(route_http("/healthz#x").kind, Kind::Health);
}
