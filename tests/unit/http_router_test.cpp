// HttpRouter: the pure parts of HTTP routing. The request target (decoded path, raw query, typed
// errors), the stream paths (FLV, HLS playlist, HLS segment) with the one name rule, the checks
// that keep traversal and odd bytes out of lookups, and method lists. The route table has its
// own file (http_route_table_test.cpp).
#include "rill/http/http_router.h"
#include "rill/server/stream_routes.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

using rill::http::HttpMethod;
using rill::http::HttpMethods;
using rill::http::HttpRouterLimits;
using rill::http::parse_request_target;
using rill::server::parse_stream_path;
using rill::http::percent_decode;
using rill::http::RequestTarget;
using rill::server::StreamPath;
using rill::server::StreamRoute;
using rill::http::target_error_status;
using rill::http::TargetError;

namespace {

// What the server makes of a target on the stream mount: a target error, a bad name (400),
// nothing (404), or a stream route.
enum class Kind { NotFound, TooLong, Malformed, Traversal, BadName, Flv, HlsPlaylist, HlsSegment };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::NotFound: return "NotFound";
    case Kind::TooLong: return "TooLong";
    case Kind::Malformed: return "Malformed";
    case Kind::Traversal: return "Traversal";
    case Kind::BadName: return "BadName";
    case Kind::Flv: return "Flv";
    case Kind::HlsPlaylist: return "HlsPlaylist";
    case Kind::HlsSegment: return "HlsSegment";
  }
  return "?";
}

struct Routed {
  Kind kind = Kind::NotFound;
  std::string why;
  std::string app, stream;
  uint64_t segment = 0;
  std::string query;
};

Routed route(std::string_view uri, const HttpRouterLimits& lim = {}) {
  Routed r;
  RequestTarget t = parse_request_target(uri, lim);
  switch (t.error) {
    case TargetError::None: break;
    case TargetError::TooLong: r.kind = Kind::TooLong; break;
    case TargetError::Malformed: r.kind = Kind::Malformed; break;
    case TargetError::Traversal: r.kind = Kind::Traversal; break;
  }
  if (!t.ok()) {
    r.why = t.why;
    return r;
  }
  r.query = t.query;
  StreamPath sp = parse_stream_path(t.path);
  if (sp.invalid_name) {
    r.kind = Kind::BadName;
    r.why = sp.why;
    return r;
  }
  switch (sp.kind) {
    case StreamRoute::None: r.kind = Kind::NotFound; break;
    case StreamRoute::Flv: r.kind = Kind::Flv; break;
    case StreamRoute::HlsPlaylist: r.kind = Kind::HlsPlaylist; break;
    case StreamRoute::HlsSegment: r.kind = Kind::HlsSegment; break;
    case StreamRoute::RecordingPlaylist: r.kind = Kind::HlsPlaylist; break;  // tested below
    case StreamRoute::RecordingMp4: r.kind = Kind::NotFound; break;          // tested below
  }
  r.app = sp.key.app;
  r.stream = sp.key.name;
  r.segment = sp.segment;
  return r;
}

// `uri` routes to `want`; with an error kind, the reason mentions `why`.
::testing::AssertionResult IsKind(std::string_view uri, Kind want, std::string_view why = "",
                                  const HttpRouterLimits& lim = {}) {
  Routed r = route(uri, lim);
  if (r.kind != want)
    return ::testing::AssertionFailure() << "route(\"" << std::string(uri).substr(0, 120) << "\") = "
                                         << kind_name(r.kind) << " (why '" << r.why << "', app '" << r.app
                                         << "', stream '" << r.stream << "'), want " << kind_name(want);
  const bool error = want != Kind::NotFound && want != Kind::Flv && want != Kind::HlsPlaylist && want != Kind::HlsSegment;
  if (error && r.why.empty()) return ::testing::AssertionFailure() << "an error without a reason";
  if (!error && !r.why.empty()) return ::testing::AssertionFailure() << "a reason without an error: " << r.why;
  if (!why.empty() && r.why.find(why) == std::string::npos)
    return ::testing::AssertionFailure() << "reason '" << r.why << "' does not mention '" << why << "'";
  return ::testing::AssertionSuccess();
}

// Not served: neither a route nor a lookup.
::testing::AssertionResult IsRejected(std::string_view uri) {
  Routed r = route(uri);
  if (r.kind != Kind::Flv && r.kind != Kind::HlsPlaylist && r.kind != Kind::HlsSegment && r.app.empty() &&
      r.stream.empty())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "route(\"" << std::string(uri).substr(0, 120) << "\") = "
                                       << kind_name(r.kind) << " (app '" << r.app << "', stream '" << r.stream
                                       << "'), want it rejected";
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

// ---- the request target ------------------------------------------------------------------

TEST(HttpRouter, TargetPathIsDecodedQueryKeptRaw) {
  RequestTarget t = parse_request_target("/li%76e/a.flv?token=a%20b&x=%zz/..#frag");
  ASSERT_TRUE(t.ok()) << t.why;
  EXPECT_EQ(t.path, "/live/a.flv");
  EXPECT_EQ(t.query, "token=a%20b&x=%zz/..");  // raw: an admission token travels as sent
  EXPECT_TRUE(t.why.empty());
  t = parse_request_target("/healthz");
  EXPECT_EQ(t.path, "/healthz");
  EXPECT_EQ(t.query, "");
  EXPECT_EQ(parse_request_target("/x?").query, "");
  EXPECT_EQ(parse_request_target("/x??a=1").query, "?a=1");
  EXPECT_EQ(parse_request_target("/x#a?b=1").query, "");  // a '?' after '#' is in the fragment
  EXPECT_EQ(parse_request_target("/").path, "/");
}

TEST(HttpRouter, TargetErrorsCarryTheirStatus) {
  EXPECT_EQ(target_error_status(TargetError::TooLong), 414);
  EXPECT_EQ(target_error_status(TargetError::Malformed), 400);
  EXPECT_EQ(target_error_status(TargetError::Traversal), 400);
  EXPECT_EQ(parse_request_target(std::string("/").append(2000, 'a')).error, TargetError::TooLong);
  EXPECT_EQ(parse_request_target("/a?" + std::string(3000, 'q')).error, TargetError::TooLong);
  EXPECT_EQ(parse_request_target("/a%zz").error, TargetError::Malformed);
  EXPECT_EQ(parse_request_target("/a/../b").error, TargetError::Traversal);
  // An error leaves no path or query behind.
  RequestTarget t = parse_request_target("/live/../x.flv?token=1");
  EXPECT_TRUE(t.path.empty());
  EXPECT_TRUE(t.query.empty());
  EXPECT_FALSE(t.ok());
}

// A path without an escape is checked in the pass that finds its end; one with an escape is
// decoded, then checked. Both must say the same of the same decoded path.
TEST(HttpRouter, RawAndEscapedPathsAreCheckedAlike) {
  for (const std::string& raw :
       std::vector<std::string>{"/a", "/a/", "/a//b", "//a", "/a/./b", "/a/../b", "/a/..", "/a/.", "/a/...",
                                "/a/.b/b..", "/a\\b", std::string("/a\x01b"), "/a\x7f", "/a?x=/../",
                                "/a#/../", "/a/..?x", "/a//?x", "/a\\/../", "/a/../\\"}) {
    std::string escaped = raw;
    escaped.replace(escaped.find('a'), 1, "%61");
    const RequestTarget plain = parse_request_target(raw), decoded = parse_request_target(escaped);
    EXPECT_EQ(plain.error, decoded.error) << raw;
    EXPECT_EQ(plain.why, decoded.why) << raw;
    EXPECT_EQ(plain.path, decoded.path) << raw;
    EXPECT_EQ(plain.query, decoded.query) << raw;
  }
  EXPECT_EQ(parse_request_target("/a\\/../").why, "control character or backslash in path");
  EXPECT_EQ(parse_request_target("/a/..//").error, TargetError::Traversal);
  EXPECT_EQ(parse_request_target("/a//b").why, "empty path segment");
}

// ---- every stream route kind -------------------------------------------------------------

TEST(HttpRouter, Flv) {
  Routed r = route("/live/test.flv");
  EXPECT_EQ(r.kind, Kind::Flv);
  EXPECT_EQ(r.app, "live");
  EXPECT_EQ(r.stream, "test");
  EXPECT_EQ(r.segment, 0u);
  EXPECT_TRUE(r.why.empty());
}

TEST(HttpRouter, HlsPlaylist) {
  Routed r = route("/live/test.m3u8");
  EXPECT_EQ(r.kind, Kind::HlsPlaylist);
  EXPECT_EQ(r.app, "live");
  EXPECT_EQ(r.stream, "test");
  EXPECT_TRUE(r.why.empty());
}

TEST(HttpRouter, HlsSegment) {
  Routed r = route("/live/test/42.ts");
  EXPECT_EQ(r.kind, Kind::HlsSegment);
  EXPECT_EQ(r.app, "live");
  EXPECT_EQ(r.stream, "test");
  EXPECT_EQ(r.segment, 42u);
  EXPECT_TRUE(r.why.empty());
  EXPECT_EQ(route("/live/test/0.ts").segment, 0u);
  EXPECT_EQ(route("/live/test/007.ts").segment, 7u);
  // fMP4 segments and init sections (hls.container: fmp4).
  for (const char* uri : {"/live/test/42.m4s", "/live/test/init-42.mp4"}) {
    const Routed f = route(uri);
    EXPECT_EQ(f.kind, Kind::HlsSegment) << uri;
    EXPECT_EQ(f.segment, 42u) << uri;
  }
  EXPECT_EQ(parse_stream_path("/live/test/3.m4s").form, rill::protocol::HlsSegmentForm::Fmp4);
  EXPECT_EQ(parse_stream_path("/live/test/init-3.mp4").form, rill::protocol::HlsSegmentForm::Init);
  const StreamPath rec = parse_stream_path("/live/test/recording.m3u8");
  EXPECT_EQ(rec.kind, StreamRoute::RecordingPlaylist);
  EXPECT_EQ(rec.key.str(), "live/test");
  const StreamPath mp4 = parse_stream_path("/live/test/recording.mp4");
  EXPECT_EQ(mp4.kind, StreamRoute::RecordingMp4);
  EXPECT_EQ(mp4.key.str(), "live/test");
  EXPECT_EQ(parse_stream_path("/live/test/recording.mp4x").kind, StreamRoute::None);
  EXPECT_EQ(route("/live/test/init-.mp4").kind, Kind::NotFound);
  EXPECT_EQ(route("/live/test/3.mp4").kind, Kind::NotFound);
}

TEST(HttpRouter, NotAStreamPath) {
  for (const char* uri : {"/", "/live", "/live/", "/live/test", "/live/test.mp4", "/live/test.FLV", "/live/test.flvx",
                          "/live/test.ts", "/live/test/1.flv", "/live/test/1.m3u8", "/a/b/c/1.ts", "/a/b/c/d/e.flv",
                          "/favicon.ico", "/live/test/1", "/live/test/seg.ts.bak", "/healthz", "/healthz/"}) {
    EXPECT_TRUE(IsKind(uri, Kind::NotFound)) << uri;
  }
  Routed r = route("/nothing/here");
  EXPECT_TRUE(r.why.empty());
  EXPECT_TRUE(r.app.empty());
  // parse_stream_path on its own: anything not rooted at '/' is no stream path.
  EXPECT_EQ(parse_stream_path("live/test.flv").kind, StreamRoute::None);
  EXPECT_EQ(parse_stream_path("").kind, StreamRoute::None);
  EXPECT_FALSE(parse_stream_path("").invalid_name);
}

TEST(HttpRouter, SuffixOnlyTheLastOne) {
  // "test.flv.m3u8" is the playlist of the stream "test.flv" (a legal name).
  Routed r = route("/live/test.flv.m3u8");
  EXPECT_EQ(r.kind, Kind::HlsPlaylist);
  EXPECT_EQ(r.stream, "test.flv");
  r = route("/live/a.m3u8.flv");
  EXPECT_EQ(r.kind, Kind::Flv);
  EXPECT_EQ(r.stream, "a.m3u8");
}

// ---- names ---------------------------------------------------------------------------------

TEST(HttpRouter, NamesWithEveryAllowedCharacter) {
  Routed r = route("/My-App_1.0~x/Str_e-a.m~9Z.flv");
  ASSERT_EQ(r.kind, Kind::Flv) << r.why;
  EXPECT_EQ(r.app, "My-App_1.0~x");
  EXPECT_EQ(r.stream, "Str_e-a.m~9Z");

  r = route("/a/b.m3u8");
  EXPECT_EQ(r.kind, Kind::HlsPlaylist);
  EXPECT_EQ(r.app, "a");
  EXPECT_EQ(r.stream, "b");

  r = route("/0/9/18446744073709551615.ts");
  ASSERT_EQ(r.kind, Kind::HlsSegment);
  EXPECT_EQ(r.app, "0");
  EXPECT_EQ(r.stream, "9");
  EXPECT_EQ(r.segment, 18446744073709551615ull);

  // A single dot inside a name is fine; names may start or end with one as long as it is not "..".
  r = route("/live/.hidden.flv");
  EXPECT_EQ(r.kind, Kind::Flv);
  EXPECT_EQ(r.stream, ".hidden");
}

TEST(HttpRouter, PercentEncodedAllowedCharactersAreDecoded) {
  Routed r = route("/li%76e/te%73%74.flv");
  ASSERT_EQ(r.kind, Kind::Flv) << r.why;
  EXPECT_EQ(r.app, "live");
  EXPECT_EQ(r.stream, "test");
  r = route("/live/a%2Db%5Fc%7E.flv");  // '-', '_', '~'
  ASSERT_EQ(r.kind, Kind::Flv) << r.why;
  EXPECT_EQ(r.stream, "a-b_c~");
}

TEST(HttpRouter, NamesWithForbiddenCharactersAreBadRequests) {
  for (const char* uri : {"/live/te st.flv", "/live/te%20st.flv", "/live/a+b.flv", "/live/a:b.flv", "/live/a@b.flv",
                          "/live/a'b.flv", "/live/a\"b.flv", "/live/a<b>.flv", "/live/a%3bb.flv", "/live/t%c3%a9st.flv",
                          "/live/a*b.m3u8", "/live/st%21/1.ts", "/live/\xff.flv"}) {
    EXPECT_TRUE(IsKind(uri, Kind::BadName, "invalid stream name")) << uri;
  }
  for (const char* uri : {"/liv%24e/test.flv", "/li ve/test/1.ts"}) {
    EXPECT_TRUE(IsKind(uri, Kind::BadName, "invalid app name")) << uri;
  }
  // The reason is the one name rule's (media::name_error).
  EXPECT_TRUE(IsKind("/live/te st.flv", Kind::BadName, "character 0x20 not allowed"));
}

TEST(HttpRouter, EmptyNamesAreBadRequests) {
  EXPECT_TRUE(IsKind("/live/.flv", Kind::BadName, "empty"));
  EXPECT_TRUE(IsKind("/live/.m3u8", Kind::BadName, "empty"));
  // Straight into parse_stream_path (no target checks): an empty app is a bad name, too.
  StreamPath sp = parse_stream_path("//x.flv");
  EXPECT_TRUE(sp.invalid_name);
  EXPECT_EQ(sp.kind, StreamRoute::None);
}

TEST(HttpRouter, NameLengthLimit) {
  std::string ok(128, 'a'), too_long(129, 'a');
  Routed r = route("/live/" + ok + ".flv");
  EXPECT_EQ(r.kind, Kind::Flv);
  EXPECT_EQ(r.stream, ok);
  EXPECT_TRUE(IsKind("/live/" + too_long + ".flv", Kind::BadName, "longer than 128"));
  EXPECT_TRUE(IsKind("/" + too_long + "/test.flv", Kind::BadName, "invalid app name"));
  EXPECT_TRUE(IsKind("/live/" + too_long + "/1.ts", Kind::BadName, "invalid stream name"));
}

// ---- traversal -----------------------------------------------------------------------------

TEST(HttpRouter, DotDotIsRejected) {
  for (const char* uri : {"/live/../x.flv", "/../live/x.flv", "/live/x/../../y.ts", "/live/..", "/..", "/../etc/passwd",
                          "/live/test/../1.ts", "/live/./test.flv", "/./live/test.flv", "/live/.", "/."}) {
    EXPECT_TRUE(IsKind(uri, Kind::Traversal, "traversal")) << uri;
  }
  // ".." inside a name or as the name of the stream is never a valid name.
  for (const char* uri : {"/live/..flv", "/live/...flv", "/live/a..b.flv", "/..x/test.flv", "/live/x../1.ts",
                          "/../1.ts", "/live/...m3u8"}) {
    EXPECT_TRUE(IsRejected(uri)) << uri;
  }
  EXPECT_TRUE(IsKind("/live/a..b.flv", Kind::BadName, "'..'"));
  EXPECT_TRUE(IsKind("/live/..flv", Kind::BadName));
}

TEST(HttpRouter, EncodedDotDotIsRejected) {
  for (const char* uri : {"/live/%2e%2e/x.flv", "/live/%2E%2E/x.flv", "/%2e%2e/live/x.flv", "/live/.%2e/x.flv",
                          "/live/%2e./x.flv", "/live/test/%2e%2e/1.ts", "/live/%2e%2e", "/live/%2e/x.flv"}) {
    EXPECT_TRUE(IsKind(uri, Kind::Traversal)) << uri;
  }
  EXPECT_TRUE(IsKind("/live/%2e%2e.flv", Kind::BadName));
  EXPECT_TRUE(IsKind("/live/a%2e%2eb.flv", Kind::BadName));
  EXPECT_TRUE(IsKind("/%2e%2e/x.flv", Kind::Traversal));
}

TEST(HttpRouter, EncodedSlashNeverEndsUpInAName) {
  // %2f decodes to '/', so it splits segments like a plain slash; it can smuggle neither a
  // slash nor a traversal into a name.
  for (const char* uri : {"/live/a%2f..%2fb.flv", "/live/a%2F..%2Fb.flv", "/live%2f..%2fsecret.flv",
                          "/live/%2f%2e%2e%2fetc.flv", "/live/x%2f%2e%2e/1.ts"}) {
    Routed r = route(uri);
    EXPECT_TRUE(r.kind == Kind::Traversal || r.kind == Kind::Malformed || r.kind == Kind::BadName)
        << uri << ": " << kind_name(r.kind);
  }
  EXPECT_TRUE(IsKind("/live/a%2fb.flv", Kind::NotFound));  // three segments, the last not .ts
  EXPECT_TRUE(IsKind("/live/%2f/x.flv", Kind::Malformed, "empty path segment"));
  for (const char* uri : {"/live%2ftest.flv", "/live/a%2fb.flv", "/live/a%2fb%2f1.ts", "/a%2Fb/c.m3u8"}) {
    Routed q = route(uri);
    EXPECT_EQ(q.app.find('/'), std::string::npos) << uri;
    EXPECT_EQ(q.stream.find('/'), std::string::npos) << uri;
  }
}

TEST(HttpRouter, EncodedNulIsRejected) {
  EXPECT_TRUE(IsKind("/live/test%00.flv", Kind::Malformed, "percent"));
  EXPECT_TRUE(IsKind("/live/%00/x.flv", Kind::Malformed, "percent"));
  EXPECT_TRUE(IsKind("/healthz%00", Kind::Malformed, "percent"));
}

TEST(HttpRouter, BackslashIsRejected) {
  EXPECT_TRUE(IsKind("/live/a\\b.flv", Kind::Malformed, "backslash"));
  EXPECT_TRUE(IsKind("/live\\..\\x.flv", Kind::Malformed, "backslash"));
  EXPECT_TRUE(IsKind("/live/a%5cb.flv", Kind::Malformed, "backslash"));
  EXPECT_TRUE(IsKind("/live/%5C..%5Cx.flv", Kind::Malformed, "backslash"));
}

TEST(HttpRouter, ControlCharactersAreRejected) {
  for (std::string uri : {std::string("/live/a\x01" "b.flv"), std::string("/live/a\tb.flv"), std::string("/live/a\rb.flv"),
                          std::string("/live/a\nb.flv"), std::string("/live/a\x1f.flv"), std::string("/live/a\x7f.flv"),
                          std::string("/live/a%0ab.flv"), std::string("/live/a%0D%0Ab.flv"), std::string("/live/a%1fb.flv"),
                          std::string("/live/a%7Fb.flv"), std::string("/healthz%09")}) {
    EXPECT_TRUE(IsKind(uri, Kind::Malformed, "control character")) << uri;
  }
  // A raw NUL inside the view (not percent-encoded) is a control character too.
  std::string nul = "/live/a";
  nul.push_back('\0');
  nul += "b.flv";
  EXPECT_TRUE(IsKind(nul, Kind::Malformed, "control character"));
}

TEST(HttpRouter, DoubleSlashesAreRejected) {
  for (const char* uri : {"//live/test.flv", "/live//test.flv", "/live/test//1.ts", "//healthz", "//", "///"}) {
    EXPECT_TRUE(IsKind(uri, Kind::Malformed, "empty path segment")) << uri;
  }
}

TEST(HttpRouter, TrailingSlashIsNotFound) {
  for (const char* uri : {"/live/test.flv/", "/live/test.m3u8/", "/live/test/1.ts/", "/live/", "/healthz/"}) {
    EXPECT_TRUE(IsKind(uri, Kind::NotFound)) << uri;
  }
}

TEST(HttpRouter, TargetMustBeAnOriginFormPath) {
  for (const char* uri : {"", "live/test.flv", "*", "http://127.0.0.1/live/test.flv", "?x=1", "#frag"}) {
    EXPECT_TRUE(IsKind(uri, Kind::Malformed, "start with '/'")) << uri;
  }
}

// ---- lengths -------------------------------------------------------------------------------

TEST(HttpRouter, OverLongPath) {
  HttpRouterLimits lim;  // max_path 1024
  // Exactly at the limit: not rejected for its length (it is simply not a route).
  std::string at_limit = std::string(lim.max_path, 'a');
  at_limit[0] = '/';
  ASSERT_EQ(at_limit.size(), lim.max_path);
  EXPECT_TRUE(IsKind(at_limit, Kind::NotFound));
  EXPECT_TRUE(IsKind(at_limit + "a", Kind::TooLong, "path longer than 1024"));
  EXPECT_TRUE(IsKind("/live/" + std::string(5000, 'x') + ".flv", Kind::TooLong));
  EXPECT_TRUE(IsKind("/live/test.flv" + std::string(100000, '/'), Kind::TooLong));
  // The path limit applies before decoding: 400 "%41" are 1200 bytes.
  std::string enc = "/";
  for (int i = 0; i < 400; ++i) enc += "%41";
  EXPECT_TRUE(IsKind(enc, Kind::TooLong));
}

TEST(HttpRouter, OverLongQuery) {
  HttpRouterLimits lim;  // max_query 2048
  EXPECT_TRUE(IsKind("/live/test.flv?" + std::string(lim.max_query, 'q'), Kind::Flv));
  EXPECT_TRUE(IsKind("/live/test.flv?" + std::string(lim.max_query + 1, 'q'), Kind::TooLong, "query longer than 2048"));
  EXPECT_TRUE(IsKind("/live/test.flv?" + std::string(100 * 1024, 'q'), Kind::TooLong));
  EXPECT_TRUE(IsKind("/healthz?" + std::string(100 * 1024, 'q'), Kind::TooLong));
}

TEST(HttpRouter, CustomLimits) {
  HttpRouterLimits lim;
  lim.max_path = 16;
  lim.max_query = 4;
  EXPECT_TRUE(IsKind("/live/abcdef.flv", Kind::Flv, "", lim));                 // 16 bytes
  EXPECT_TRUE(IsKind("/live/abcdefg.flv", Kind::TooLong, "longer than 16", lim));  // 17 bytes
  EXPECT_TRUE(IsKind("/live/a.flv?abcd", Kind::Flv, "", lim));
  EXPECT_TRUE(IsKind("/live/a.flv?abcde", Kind::TooLong, "longer than 4", lim));
}

// ---- percent-encoding ----------------------------------------------------------------------

TEST(HttpRouter, BadPercentEscapesAreBadRequests) {
  for (const char* uri : {"/live/test.flv%", "/live/test.flv%4", "/live/%zz.flv", "/live/%g0.flv", "/live/%0g.flv",
                          "/live/%%41.flv", "/%", "/live/te%-1st.flv", "/live/te% 1st.flv", "/live/a%2"}) {
    EXPECT_TRUE(IsKind(uri, Kind::Malformed, "percent")) << uri;
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
  out = "stale";
  ASSERT_TRUE(percent_decode("a%41", out));
  EXPECT_EQ(out, "aA");
}

// ---- HLS segment numbers -------------------------------------------------------------------

TEST(HttpRouter, SegmentNumbers) {
  EXPECT_EQ(route("/live/test/18446744073709551615.ts").segment, 18446744073709551615ull);
  // Overflow, signs, non-digits, empty: not a segment.
  for (const char* uri : {"/live/test/18446744073709551616.ts", "/live/test/99999999999999999999999999.ts",
                          "/live/test/-1.ts", "/live/test/+1.ts", "/live/test/1a.ts", "/live/test/a1.ts",
                          "/live/test/0x10.ts", "/live/test/1.5.ts", "/live/test/1e3.ts", "/live/test/.ts",
                          "/live/test/ 1.ts", "/live/test/%20%31.ts", "/live/test/seg-1.ts"}) {
    EXPECT_TRUE(IsRejected(uri)) << uri;
    EXPECT_NE(route(uri).kind, Kind::HlsSegment) << uri;
  }
  EXPECT_TRUE(IsKind("/live/test/18446744073709551616.ts", Kind::NotFound));
  EXPECT_TRUE(IsKind("/live/test/abc.ts", Kind::NotFound));
  // Encoded digits are digits.
  Routed r = route("/live/test/%31%32.ts");
  EXPECT_EQ(r.kind, Kind::HlsSegment);
  EXPECT_EQ(r.segment, 12u);
  // The names of a segment route are checked like any other, before the number.
  EXPECT_TRUE(IsKind("/li.ve../test/1.ts", Kind::BadName));
  EXPECT_TRUE(IsKind("/live/te st/1.ts", Kind::BadName));
  EXPECT_TRUE(IsKind("/live/te st/x.ts", Kind::BadName));
}

// ---- query strings and fragments -----------------------------------------------------------

TEST(HttpRouter, QueryStringIsIgnoredForRouting) {
  for (const char* uri : {"/live/test.flv?token=abc", "/live/test.flv?", "/live/test.flv?a=1&b=2",
                          "/live/test.flv?x=../../etc/passwd", "/live/test.flv?x=%00%zz\\", "/live/test.flv?/other.m3u8",
                          "/live/test.flv??", "/live/test.flv?a/b/c.ts"}) {
    Routed r = route(uri);
    EXPECT_EQ(r.kind, Kind::Flv) << uri << ": " << kind_name(r.kind) << " " << r.why;
    EXPECT_EQ(r.app, "live") << uri;
    EXPECT_EQ(r.stream, "test") << uri;
    EXPECT_EQ(r.query, std::string_view(uri).substr(std::string_view(uri).find('?') + 1)) << uri;
  }
  Routed r = route("/live/test/5.ts?_HLS_msn=3");
  EXPECT_EQ(r.kind, Kind::HlsSegment);
  EXPECT_EQ(r.segment, 5u);
  EXPECT_EQ(r.query, "_HLS_msn=3");
  EXPECT_EQ(route("/live/test.m3u8?t=1").kind, Kind::HlsPlaylist);
  // An encoded '?' is part of the path, not a query.
  EXPECT_TRUE(IsKind("/live/test%3f.flv", Kind::BadName));
}

TEST(HttpRouter, FragmentIsIgnored) {
  Routed r = route("/live/test.flv#t=10");
  EXPECT_EQ(r.kind, Kind::Flv);
  EXPECT_EQ(r.stream, "test");
  EXPECT_EQ(r.query, "");
  EXPECT_EQ(parse_request_target("/healthz#x").path, "/healthz");
}

// ---- methods -------------------------------------------------------------------------------

TEST(HttpRouter, MethodLists) {
  EXPECT_EQ(HttpMethods().list(), "");
  EXPECT_EQ((HttpMethod::Options | HttpMethod::Get | HttpMethod::Head).list(), "GET, HEAD, OPTIONS");
  EXPECT_EQ((HttpMethod::Delete | HttpMethod::Post | HttpMethod::Get).list(), "GET, POST, DELETE");
  HttpMethods all = HttpMethod::Get | HttpMethod::Head | HttpMethod::Post | HttpMethod::Put | HttpMethod::Delete |
                    HttpMethod::Patch | HttpMethod::Options | HttpMethod::Trace | HttpMethod::Connect;
  EXPECT_EQ(all.list(), "GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS, TRACE, CONNECT");
  EXPECT_TRUE(all.has(HttpMethod::Patch));
  EXPECT_FALSE(HttpMethods(HttpMethod::Get).has(HttpMethod::Head));
  EXPECT_TRUE(HttpMethods().empty());
}
