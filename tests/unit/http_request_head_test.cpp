// HttpRequestHeadParser and HttpChunkedDecoder: the request line, header fields, framing and
// connection fields of RFC 9112, every refusal with its status (400, 414, 431, 501, 505, 413),
// the limits at and one past their bound, and the same answer whatever way the bytes are split.
#include "rill/protocol/http_request_head.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

using rill::protocol::HttpChunkedDecoder;
using rill::protocol::HttpParseLimits;
using rill::protocol::HttpRequestHead;
using rill::protocol::HttpRequestHeadParser;
using rill::protocol::HttpVersion;

namespace {

using Result = HttpRequestHeadParser::Result;

std::span<const uint8_t> bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

struct Parsed {
  Result result = Result::NeedMore;
  size_t consumed = 0;
  HttpRequestHead head;
  int status = 0;
  std::string why;
};

Parsed finish(HttpRequestHeadParser& p, Result r, size_t consumed) {
  Parsed out{r, consumed, {}, 0, {}};
  if (r == Result::Complete) out.head = p.head();
  if (r == Result::Error) out.status = p.error().status, out.why = p.error().why;
  return out;
}

// Fed in pieces of `step` bytes (all at once when 0), until the parser stops asking for more.
Parsed parse(std::string_view text, HttpParseLimits lim = {}, size_t step = 0) {
  HttpRequestHeadParser p(lim);
  size_t total = 0;
  Result r = Result::NeedMore;
  while (r == Result::NeedMore && total < text.size()) {
    const size_t n = step == 0 ? text.size() - total : std::min(step, text.size() - total);
    size_t used = 0;
    r = p.feed(bytes(text.substr(total, n)), used);
    EXPECT_LE(used, n);
    if (r == Result::NeedMore) {
      EXPECT_EQ(used, n);
    }
    EXPECT_LE(p.buffered(), lim.max_head);
    total += used;
  }
  return finish(p, r, total);
}

// Two pieces, cut at `at`.
Parsed parse_split(std::string_view text, size_t at) {
  HttpRequestHeadParser p;
  size_t a = 0, b = 0;
  Result r = p.feed(bytes(text.substr(0, at)), a);
  if (r == Result::NeedMore) r = p.feed(bytes(text.substr(at)), b);
  return finish(p, r, a + b);
}

// Everything a parse gave, as text (consumed left out on Error: it is then what was looked at).
std::string summary(const Parsed& p) {
  const HttpRequestHead& h = p.head;
  std::string s = std::to_string(static_cast<int>(p.result)) + " " + std::to_string(p.status) + " " + p.why;
  if (p.result != Result::Error) s += " @" + std::to_string(p.consumed);
  s.append(" ").append(h.method).append(" ").append(h.target).append(
      h.version == HttpVersion::Http10 ? " 1.0" : " 1.1");
  for (const auto& f : h.headers) s.append("|").append(f.name).append(":").append(f.value);
  s += " cl=" + (h.content_length ? std::to_string(*h.content_length) : std::string("-"));
  s += std::string(h.chunked ? " chunked" : "") + (h.keep_alive ? " ka" : "") +
       (h.expect_continue ? " 100" : "");
  return s + (h.has_host ? " host" : "");
}

// "status why" of a refused head.
std::string refusal(std::string_view text, HttpParseLimits lim = {}, size_t step = 0) {
  const Parsed p = parse(text, lim, step);
  return p.result == Result::Error ? std::to_string(p.status) + " " + p.why : "not refused";
}

// The status a head is refused with, 0 when it is complete, -1 when it is not finished.
int status_of(std::string_view text, HttpParseLimits lim = {}) {
  const Parsed p = parse(text, lim);
  return p.result == Result::Complete ? 0 : p.result == Result::Error ? p.status : -1;
}

std::string get_with(std::string_view fields, std::string_view version = "HTTP/1.1") {
  return "GET / " + std::string(version) + "\r\nHost: a\r\n" + std::string(fields) + "\r\n";
}

}  // namespace

TEST(HttpRequestHeadParser, ParsesASimpleGet) {
  const std::string text =
      "GET /live/cam.flv?token=x HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t/1\r\n\r\n";
  const Parsed p = parse(text);
  ASSERT_EQ(p.result, Result::Complete) << p.why;
  EXPECT_EQ(p.consumed, text.size());
  EXPECT_EQ(p.head.method, "GET");
  EXPECT_EQ(p.head.target, "/live/cam.flv?token=x");
  EXPECT_EQ(p.head.version, HttpVersion::Http11);
  ASSERT_EQ(p.head.headers.size(), 2u);
  EXPECT_EQ(p.head.headers[0].name, "Host");
  EXPECT_EQ(p.head.headers[0].value, "example.com");
  EXPECT_EQ(p.head.headers[1].name, "User-Agent");
  EXPECT_FALSE(p.head.content_length.has_value());
  EXPECT_FALSE(p.head.chunked);
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_FALSE(p.head.expect_continue);
  EXPECT_TRUE(p.head.has_host);
}

TEST(HttpRequestHeadParser, ParsesHeadAndPostWithContentLength) {
  Parsed p = parse("HEAD /x HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_EQ(p.result, Result::Complete);
  EXPECT_EQ(p.head.method, "HEAD");
  const std::string post = "POST /api/v1/streams HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
  p = parse(post);
  ASSERT_EQ(p.result, Result::Complete) << p.why;
  EXPECT_EQ(p.head.method, "POST");
  EXPECT_EQ(p.head.content_length, 5u);
  EXPECT_EQ(p.consumed, post.size() - 5);  // the body is not touched
}

TEST(HttpRequestHeadParser, AsksForMoreUntilTheBlankLine) {
  HttpRequestHeadParser p;
  size_t used = 0;
  EXPECT_EQ(p.feed(bytes("GET / HTTP/1.1\r\nHost: a\r\n"), used), Result::NeedMore);
  EXPECT_EQ(used, 25u);
  EXPECT_EQ(p.feed(bytes("\r"), used), Result::NeedMore);
  EXPECT_EQ(p.buffered(), 1u);
  EXPECT_EQ(p.feed(bytes("\nrest"), used), Result::Complete);
  EXPECT_EQ(used, 1u);
  EXPECT_EQ(p.buffered(), 0u);
  // Complete repeats without consuming until reset().
  EXPECT_EQ(p.feed(bytes("GET"), used), Result::Complete);
  EXPECT_EQ(used, 0u);
  const HttpRequestHead h = p.take();
  EXPECT_EQ(h.target, "/");
  EXPECT_TRUE(p.head().target.empty());
}

TEST(HttpRequestHeadParser, PipelinedRequestsInOneBuffer) {
  const std::string text =
      "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
      "GET /b HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
  HttpRequestHeadParser p;
  size_t used = 0;
  ASSERT_EQ(p.feed(bytes(text), used), Result::Complete);
  EXPECT_EQ(p.head().target, "/a");
  EXPECT_EQ(text.substr(used, 3), "abc");
  size_t pos = used + *p.head().content_length;
  p.reset();
  ASSERT_EQ(p.feed(bytes(text).subspan(pos), used), Result::Complete);
  EXPECT_EQ(p.head().target, "/b");
  EXPECT_FALSE(p.head().keep_alive);
  EXPECT_EQ(pos + used, text.size());
}

TEST(HttpRequestHeadParser, SameResultWhateverTheSplit) {
  const std::string texts[] = {
      "GET /a?b=c HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Close\r\nX-Empty:\r\n\r\nNEXT",
      "\r\nPOST /p HTTP/1.0\nContent-Length: 1, 1\nConnection: keep-alive\n\nB",
      "PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n",
      "GET / HTTP/1.1\r\nA: b\r\nBad Name: x\r\n\r\n",
      "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n",
      "GET / HTTP/2.0\r\n\r\n",
      "GET /\x01 HTTP/1.1\r\n\r\n",
      "GET / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
  };
  for (const std::string& t : texts) {
    SCOPED_TRACE(t);
    const std::string whole = summary(parse(t));
    EXPECT_EQ(summary(parse(t, {}, 1)), whole);
    EXPECT_EQ(summary(parse(t, {}, 3)), whole);
    for (size_t at = 0; at <= t.size(); ++at) EXPECT_EQ(summary(parse_split(t, at)), whole) << at;
  }
  // Limits too: byte by byte reaches the same 431 and 414.
  HttpParseLimits lim;
  lim.max_head = 40;
  lim.max_target = 10;
  for (const std::string& t :
       {get_with("X: 0123456789012345678901234\r\n"), std::string("GET /0123456789ab HTTP/1.1\r\n"),
        "GET /" + std::string(60, 'a')}) {
    EXPECT_EQ(summary(parse(t, lim, 1)), summary(parse(t, lim)));
  }
}

TEST(HttpRequestHeadParser, IgnoresAFewEmptyLinesBeforeTheRequestLine) {
  Parsed p = parse("\r\n\n\r\n\nGET / HTTP/1.1\r\n\r\n");
  ASSERT_EQ(p.result, Result::Complete) << p.why;
  EXPECT_EQ(p.head.method, "GET");
  EXPECT_EQ(refusal("\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n"),
            "400 request line: more than 4 empty lines before it");
}

TEST(HttpRequestHeadParser, AcceptsBareLfRefusesBareCr) {
  Parsed p = parse("GET / HTTP/1.1\nHost: a\nX: y\n\n");
  ASSERT_EQ(p.result, Result::Complete) << p.why;
  EXPECT_EQ(p.head.headers[1].value, "y");
  EXPECT_EQ(refusal("GET /\r HTTP/1.1\r\n\r\n"), "400 request line: bare CR at byte 5");
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n"), "400 header field 2: bare CR at byte 4");
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\n\r\r\n"), 400);
}

TEST(HttpRequestHeadParser, RefusesControlBytesAsSoonAsTheyArrive) {
  // A TLS ClientHello on the HTTP port: refused at its first byte, no line end needed.
  HttpRequestHeadParser p;
  size_t used = 0;
  EXPECT_EQ(p.feed(bytes(std::string_view("\x16\x03\x01\x02\x00", 5)), used), Result::Error);
  EXPECT_EQ(p.error().status, 400);
  EXPECT_EQ(p.error().why, "request line: control byte 0x16 at byte 0");
  // After Error, nothing is consumed until reset().
  EXPECT_EQ(p.feed(bytes("GET / HTTP/1.1\r\n\r\n"), used), Result::Error);
  EXPECT_EQ(used, 0u);
  p.reset();
  EXPECT_EQ(p.feed(bytes("GET / HTTP/1.1\r\n\r\n"), used), Result::Complete);
}

TEST(HttpRequestHeadParser, MethodIsAToken) {
  EXPECT_EQ(status_of("PATCH / HTTP/1.1\r\n\r\n"), 0);
  EXPECT_EQ(status_of("M-SEARCH * HTTP/1.1\r\n\r\n"), 0);
  EXPECT_EQ(refusal("G@T / HTTP/1.1\r\n\r\n"), "400 request line: method 'G@T' is not a token");
  EXPECT_EQ(status_of(" / HTTP/1.1\r\n\r\n"), 400);        // empty method
  EXPECT_EQ(status_of("GET\t/ HTTP/1.1\r\n\r\n"), 400);    // HTAB is no separator
  EXPECT_EQ(status_of("GET\r\n\r\n"), 400);                // no SP at all
  EXPECT_EQ(status_of("G\x80T / HTTP/1.1\r\n\r\n"), 400);  // obs-text is no tchar
}

TEST(HttpRequestHeadParser, RequestLineHasExactlySingleSpaces) {
  EXPECT_EQ(status_of("GET  / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /  HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.1 \r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /a b HTTP/1.1\r\n\r\n"), 400);
}

TEST(HttpRequestHeadParser, TargetIsVisibleAscii) {
  EXPECT_EQ(status_of("GET /a%20b?c=[d]&e=~ HTTP/1.1\r\n\r\n"), 0);
  EXPECT_EQ(refusal("GET /\x80 HTTP/1.1\r\n\r\n"),
            "400 request line: byte 0x80 in the request-target (visible ASCII expected)");
  EXPECT_EQ(status_of("GET /\x7f HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of(std::string("GET /\0 HTTP/1.1\r\n\r\n", 19)), 400);
  EXPECT_EQ(status_of("GET /\t HTTP/1.1\r\n\r\n"), 400);
}

TEST(HttpRequestHeadParser, TargetLimitAtAndOverTheBound) {
  HttpParseLimits lim;
  lim.max_target = 100;
  const std::string target = std::string(1, '/').append(99, 'a');
  const Parsed ok = parse("GET " + target + " HTTP/1.1\r\n\r\n", lim);
  ASSERT_EQ(ok.result, Result::Complete) << ok.why;
  EXPECT_EQ(ok.head.target, target);
  EXPECT_EQ(refusal("GET " + target + "b HTTP/1.1\r\n\r\n", lim),
            "414 request line: request-target of 101 bytes, over 100");
}

TEST(HttpRequestHeadParser, VersionIsHttp10Or11) {
  Parsed p = parse("GET / HTTP/1.0\r\n\r\n");
  ASSERT_EQ(p.result, Result::Complete);
  EXPECT_EQ(p.head.version, HttpVersion::Http10);
  EXPECT_EQ(refusal("GET / HTTP/2.0\r\n\r\n"), "505 request line: HTTP-version 'HTTP/2.0' not supported");
  EXPECT_EQ(status_of("GET / HTTP/1.2\r\n\r\n"), 505);
  EXPECT_EQ(status_of("GET / HTTP/0.9\r\n\r\n"), 505);
  EXPECT_EQ(refusal("GET / http/1.1\r\n\r\n"), "400 request line: 'http/1.1' is not an HTTP-version");
  EXPECT_EQ(status_of("GET / HTTP/1.10\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/11\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/a.b\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / \r\n\r\n"), 400);
}

TEST(HttpRequestHeadParser, FieldValuesAreTrimmedAndKeepObsText) {
  const Parsed p = parse(get_with("X-A: \t a b \t\r\nX-B:\r\nX-C:\xc3\xa9t\xc3\xa9\r\nX-D:   \r\n"));
  ASSERT_EQ(p.result, Result::Complete) << p.why;
  ASSERT_EQ(p.head.headers.size(), 5u);
  EXPECT_EQ(p.head.headers[1].value, "a b");
  EXPECT_EQ(p.head.headers[2].value, "");
  EXPECT_EQ(p.head.headers[3].value, "\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(p.head.headers[4].value, "");
}

TEST(HttpRequestHeadParser, RefusesMalformedFieldLines) {
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: a\r\nX: y\r\nBad : z\r\n\r\n"),
            "400 header field 3: whitespace before ':'");
  EXPECT_EQ(status_of(get_with("Bad\t: z\r\n")), 400);
  EXPECT_EQ(
      refusal(get_with("X: a\r\n  folded\r\n")),
      "400 header field 3: starts with whitespace (obs-fold is not accepted)");  // obs-fold, RFC 9112 §5.2
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\n Host: a\r\n\r\n"), 400);  // whitespace after the request line
  EXPECT_EQ(status_of(get_with("NoColon\r\n")), 400);
  EXPECT_EQ(status_of(get_with(": empty name\r\n")), 400);
  EXPECT_EQ(status_of(get_with("B(d): x\r\n")), 400);
  EXPECT_EQ(status_of(get_with(std::string("X: a\0b\r\n", 8))), 400);
  EXPECT_EQ(status_of(get_with("X: a\x7f\r\n")), 400);
  EXPECT_EQ(status_of(get_with("X: a\x1b[31m\r\n")), 400);
}

TEST(HttpRequestHeadParser, HeaderCountAtAndOverTheLimit) {
  HttpParseLimits lim;
  lim.max_headers = 3;
  EXPECT_EQ(status_of(get_with("A: 1\r\nB: 2\r\n"), lim), 0);  // Host + 2
  EXPECT_EQ(refusal(get_with("A: 1\r\nB: 2\r\nC: 3\r\n"), lim),
            "431 header field 4: more than 3 header fields");
}

TEST(HttpRequestHeadParser, HeadSizeAtAndOverTheLimit) {
  const std::string text = get_with("X-Pad: " + std::string(50, 'p') + "\r\n");
  HttpParseLimits lim;
  lim.max_head = text.size();
  for (size_t step : {0, 1, 7}) {
    EXPECT_EQ(parse(text, lim, step).result, Result::Complete);
    lim.max_head = text.size() - 1;
    EXPECT_EQ(refusal(text, lim, step),
              "431 head: longer than " + std::to_string(lim.max_head) + " bytes (at header field 3)");
    lim.max_head = text.size();
  }
  // The same with a bare LF blank line: the line ends count as sent.
  const std::string lf = "GET / HTTP/1.1\nA: b\n\n";
  lim.max_head = lf.size();
  EXPECT_EQ(status_of(lf, lim), 0);
  lim.max_head = lf.size() - 1;
  EXPECT_EQ(status_of(lf, lim), 431);
}

TEST(HttpRequestHeadParser, OversizeIsSeenWhileBytesArrive) {
  // Fields that never end: refused once max_head bytes are in, never buffering more.
  HttpParseLimits lim;
  lim.max_head = 200;
  HttpRequestHeadParser p(lim);
  size_t used = 0, total = 0;
  ASSERT_EQ(p.feed(bytes("GET / HTTP/1.1\r\n"), used), Result::NeedMore);
  total += used;
  const std::string endless(1000, 'x');
  Result r = Result::NeedMore;
  for (size_t i = 0; i < endless.size() && r == Result::NeedMore; ++i) {
    r = p.feed(bytes(std::string_view(endless).substr(i, 1)), used);
    total += used;
    EXPECT_LE(p.buffered(), lim.max_head);
  }
  ASSERT_EQ(r, Result::Error);
  EXPECT_EQ(p.error().status, 431);
  EXPECT_EQ(total, 200u);
  // A request line that fills the head: 414 when its target is over max_target, else 431.
  lim.max_target = 100;
  EXPECT_EQ(refusal("GET /" + std::string(500, 'a'), lim, 13),
            "414 request line: request-target longer than 100 bytes");
  EXPECT_EQ(refusal("GET /" + std::string(80, 'a') + " HTTP/1.1" + std::string(200, ' '), lim, 13),
            "431 request line: longer than the head limit of 200 bytes");
  EXPECT_EQ(parse(std::string(300, 'G'), lim).status, 431);  // a method with no end
}

TEST(HttpRequestHeadParser, ContentLength) {
  Parsed p = parse(get_with("Content-Length: 0\r\n"));
  EXPECT_EQ(p.head.content_length, 0u);
  p = parse(get_with("Content-Length: 0042\r\n"));
  EXPECT_EQ(p.head.content_length, 42u);
  // RFC 9112 §6.3 item 5: repeated fields or a list of one same value.
  p = parse(get_with("Content-Length: 7\r\ncontent-length: 7\r\n"));
  EXPECT_EQ(p.head.content_length, 7u);
  p = parse(get_with("Content-Length: 7, 7 ,7\r\n"));
  EXPECT_EQ(p.head.content_length, 7u);
  p = parse(get_with("Content-Length: 9223372036854775807\r\n"));
  EXPECT_EQ(p.head.content_length, 9223372036854775807u);
  EXPECT_EQ(refusal(get_with("Content-Length: 7\r\nContent-Length: 8\r\n")),
            "400 header 'Content-Length': values 7 and 8 disagree");
  EXPECT_EQ(status_of(get_with("Content-Length: 7, 8\r\n")), 400);
  EXPECT_EQ(refusal(get_with("Content-Length: 12a\r\n")),
            "400 header 'Content-Length': '12a' is not a number");
  for (const char* bad : {"+5", "-5", "", "0x10", "5,", "1 2", "1e3"}) {
    EXPECT_EQ(status_of(get_with("Content-Length: " + std::string(bad) + "\r\n")), 400) << bad;
  }
  EXPECT_EQ(refusal(get_with("Content-Length: 9223372036854775808\r\n")),
            "400 header 'Content-Length': '9223372036854775808' is too large");  // 2^63
  EXPECT_EQ(status_of(get_with("Content-Length: 99999999999999999999999\r\n")), 400);
}

TEST(HttpRequestHeadParser, TransferEncoding) {
  Parsed p = parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  ASSERT_EQ(p.result, Result::Complete) << p.why;
  EXPECT_TRUE(p.head.chunked);
  EXPECT_FALSE(p.head.content_length.has_value());
  EXPECT_TRUE(parse("POST / HTTP/1.1\r\ntransfer-encoding: Chunked\r\n\r\n").head.chunked);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
            "501 header 'Transfer-Encoding': transfer coding 'gzip' not supported");
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), 501);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n"),
            501);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nTransfer-Encoding: \r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nTransfer-Encoding: \"chunked\"\r\n\r\n"), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"),
            "400 header 'Transfer-Encoding': sent with Content-Length");
  EXPECT_EQ(refusal("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
            "400 header 'Transfer-Encoding': not allowed in an HTTP/1.0 request");
}

TEST(HttpRequestHeadParser, KeepAliveRules) {
  EXPECT_TRUE(parse("GET / HTTP/1.1\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(parse("GET / HTTP/1.1\r\nConnection: closed\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(parse("GET / HTTP/1.0\r\nconnection: Keep-Alive\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(
      parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\nKeep-Alive: timeout=5\r\n\r\n").head.keep_alive);
}

TEST(HttpRequestHeadParser, ExpectContinue) {
  EXPECT_TRUE(parse(get_with("Expect: 100-continue\r\n")).head.expect_continue);
  EXPECT_TRUE(parse(get_with("expect: 100-Continue \r\n")).head.expect_continue);
  EXPECT_FALSE(parse(get_with("Expect: 100-continue\r\n", "HTTP/1.0")).head.expect_continue);
  EXPECT_FALSE(parse(get_with("Expect: something-else\r\n")).head.expect_continue);
  EXPECT_FALSE(parse(get_with("")).head.expect_continue);
}

TEST(HttpRequestHeadParser, Host) {
  EXPECT_TRUE(parse(get_with("")).head.has_host);
  const Parsed p = parse("GET / HTTP/1.1\r\nX: y\r\n\r\n");
  ASSERT_EQ(p.result, Result::Complete);  // the server decides about a missing Host
  EXPECT_FALSE(p.head.has_host);
  EXPECT_EQ(status_of(get_with("host: b\r\n")), 400);  // RFC 9112 §3.2: more than one
}

TEST(HttpRequestHeadParser, FindIsCaseInsensitiveAndKeepsTheFirst) {
  const Parsed p = parse(get_with("Content-Type: a\r\nX-Tag: 1\r\nCONTENT-TYPE: b\r\n"));
  ASSERT_EQ(p.result, Result::Complete);
  ASSERT_NE(p.head.find("content-type"), nullptr);
  EXPECT_EQ(*p.head.find("content-type"), "a");
  EXPECT_EQ(*p.head.find("CoNtEnT-tYpE"), "a");
  EXPECT_EQ(*p.head.find("HOST"), "a");
  EXPECT_EQ(p.head.find("X-Ta"), nullptr);
  EXPECT_EQ(p.head.find("Missing"), nullptr);
  EXPECT_EQ(p.head.headers[3].name, "CONTENT-TYPE");  // names as received, in order
}

// find() tries the exact spelling first per field: a later field in that spelling must not win
// over an earlier one in another case.
TEST(HttpRequestHeadParser, FindExactSpellingKeepsTheFirst) {
  const Parsed p = parse(get_with("user-agent: a\r\nUser-Agent: b\r\n"));
  ASSERT_EQ(p.result, Result::Complete);
  ASSERT_NE(p.head.find("User-Agent"), nullptr);
  EXPECT_EQ(*p.head.find("User-Agent"), "a");
  EXPECT_EQ(*p.head.find("user-agent"), "a");
  EXPECT_EQ(p.head.find("User-Agenx"), nullptr);  // same length, no match
}

namespace {

// Whether `v` lies in `bytes`.
bool views_into(std::string_view v, std::string_view bytes) {
  const std::less_equal<const char*> le;
  return le(bytes.data(), v.data()) && le(v.data() + v.size(), bytes.data() + bytes.size());
}

bool all_views_into(const HttpRequestHead& h, std::string_view bytes) {
  bool in = views_into(h.method, bytes) && views_into(h.target, bytes);
  for (const auto& f : h.headers) in = in && views_into(f.name, bytes) && views_into(f.value, bytes);
  return in;
}

}  // namespace

TEST(HttpRequestHeadParser, ViewsLiveAsLongAsTheHead) {
  // The head keeps its own copy of its bytes: the input overwritten (a connection erases what it
  // parsed) and the parser gone, the views still read the request.
  std::string input = "GET /live/cam.m3u8?t=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t/1\r\n\r\nNEXT";
  const std::string text = input.substr(0, input.size() - 4);
  HttpRequestHead h;
  {
    HttpRequestHeadParser p;
    size_t used = 0;
    ASSERT_EQ(p.feed(bytes(input), used), Result::Complete);
    EXPECT_EQ(used, text.size());
    h = p.take();
  }
  std::fill(input.begin(), input.end(), '#');
  EXPECT_EQ(h.bytes(), text);
  EXPECT_TRUE(all_views_into(h, h.bytes()));
  EXPECT_EQ(h.method, "GET");
  EXPECT_EQ(h.target, "/live/cam.m3u8?t=1");
  ASSERT_EQ(h.headers.size(), 2u);
  EXPECT_EQ(h.headers[1].name, "User-Agent");
  ASSERT_NE(h.find("HOST"), nullptr);
  EXPECT_EQ(*h.find("HOST"), "example.com");
  EXPECT_TRUE(views_into(*h.find("host"), h.bytes()));

  // A move keeps the bytes where they are (an exchange takes the head by move).
  const char* where = h.bytes().data();
  auto moved = std::make_unique<HttpRequestHead>(std::move(h));
  EXPECT_EQ(moved->bytes().data(), where);
  EXPECT_EQ(moved->target.data(), where + 4);
  // A copy, or a copy assigned, has bytes of its own and outlives the original.
  HttpRequestHead copy = *moved;
  HttpRequestHead assigned;
  assigned = *moved;
  moved.reset();
  for (const HttpRequestHead* c : {&copy, &assigned}) {
    EXPECT_EQ(c->bytes(), text);
    EXPECT_TRUE(all_views_into(*c, c->bytes()));
    EXPECT_EQ(c->target, "/live/cam.m3u8?t=1");
    ASSERT_EQ(c->headers.size(), 2u);
    EXPECT_EQ(c->headers[0].value, "example.com");
    ASSERT_NE(c->find("user-agent"), nullptr);
    EXPECT_EQ(*c->find("user-agent"), "t/1");
    EXPECT_TRUE(c->has_host);
  }
  EXPECT_NE(copy.bytes().data(), assigned.bytes().data());
  // A head not made by the parser (views of other storage) is copied as it is.
  HttpRequestHead plain;
  plain.method = "GET";
  HttpRequestHead plain_copy = plain;
  EXPECT_EQ(plain_copy.method.data(), plain.method.data());
  EXPECT_TRUE(plain_copy.bytes().empty());
}

TEST(HttpRequestHeadParser, AHeadSplitOverSeveralReads) {
  // As a connection reads: each piece in a buffer that is overwritten once fed, cuts anywhere
  // (inside a CRLF, a name, a value, the empty line before the request line).
  const std::string text =
      "\r\nGET /a HTTP/1.1\r\nHost: h\r\nX-Long: " + std::string(300, 'v') + "\r\nConnection: close\r\n\r\n";
  const Parsed whole = parse(text);
  ASSERT_EQ(whole.result, Result::Complete) << whole.why;
  for (size_t step : {1, 2, 3, 5, 17, 64, 200, 340}) {
    SCOPED_TRACE(step);
    HttpRequestHeadParser p;
    std::string piece;
    size_t total = 0;
    Result r = Result::NeedMore;
    while (r == Result::NeedMore && total < text.size()) {
      piece = text.substr(total, step);
      size_t used = 0;
      r = p.feed(bytes(piece), used);
      std::fill(piece.begin(), piece.end(), '#');
      total += used;
      if (r == Result::NeedMore) {
        EXPECT_FALSE(p.idle() && total > 2);
      }
    }
    ASSERT_EQ(r, Result::Complete) << p.error().why;
    Parsed got{r, total, p.take(), 0, {}};
    EXPECT_EQ(summary(got), summary(whole));
    EXPECT_EQ(got.head.bytes(), text.substr(2));  // the empty line before is not the head's
    EXPECT_TRUE(all_views_into(got.head, got.head.bytes()));
    ASSERT_EQ(got.head.headers.size(), 3u);
    EXPECT_EQ(got.head.headers[1].value, std::string(300, 'v'));
    EXPECT_FALSE(got.head.keep_alive);
  }
}

TEST(HttpRequestHeadParser, IdleUntilTheFirstByteOfARequest) {
  HttpRequestHeadParser p;
  size_t used = 0;
  EXPECT_TRUE(p.idle());
  EXPECT_EQ(p.feed(bytes("\r\n"), used), Result::NeedMore);
  EXPECT_TRUE(p.idle());  // an empty line before the request line is no request yet
  EXPECT_EQ(p.feed(bytes("\r"), used), Result::NeedMore);
  EXPECT_FALSE(p.idle());
  EXPECT_EQ(p.feed(bytes("\nG"), used), Result::NeedMore);
  EXPECT_FALSE(p.idle());
  EXPECT_EQ(p.buffered(), 1u);
  EXPECT_EQ(p.feed(bytes("ET / HTTP/1.1\r\nHost: a\r\n"), used), Result::NeedMore);
  EXPECT_EQ(p.buffered(), 0u);
  EXPECT_FALSE(p.idle());
  EXPECT_EQ(p.feed(bytes("\r\n"), used), Result::Complete);
  EXPECT_EQ(p.head().bytes(), "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  p.reset();
  EXPECT_TRUE(p.idle());
}

// ---- HttpChunkedDecoder -------------------------------------------------------------------------

namespace {

using ChunkResult = HttpChunkedDecoder::Result;

struct Decoded {
  ChunkResult result = ChunkResult::NeedMore;
  size_t consumed = 0;
  std::string out;
  int status = 0;
  std::string why;
};

Decoded decode(std::string_view text, size_t max_body = 1 << 20, size_t step = 0) {
  HttpChunkedDecoder d(max_body);
  Decoded r;
  while (r.result == ChunkResult::NeedMore && r.consumed < text.size()) {
    const size_t n = step == 0 ? text.size() - r.consumed : std::min(step, text.size() - r.consumed);
    size_t used = 0;
    r.result = d.feed(bytes(text.substr(r.consumed, n)), used, r.out);
    EXPECT_LE(used, n);
    EXPECT_LE(r.out.size(), max_body);
    r.consumed += used;
  }
  r.status = d.status();
  r.why = d.why();
  return r;
}

}  // namespace

TEST(HttpChunkedDecoder, DecodesChunksAndStopsAfterTheFinalCrlf) {
  const std::string text =
      "4\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
  const Decoded d = decode(text);
  ASSERT_EQ(d.result, ChunkResult::Done) << d.why;
  EXPECT_EQ(d.out, "Wikipedia in\r\n\r\nchunks.");
  EXPECT_EQ(text.substr(d.consumed), "GET / HTTP/1.1\r\n");
  EXPECT_EQ(d.status, 0);
}

TEST(HttpChunkedDecoder, SameResultWhateverTheSplit) {
  const std::string texts[] = {
      "4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nX-Trailer: a\r\n\r\nNEXT",
      "a\r\n0123456789\r\n0\r\n\r\n",
      "4\r\nWikiX\r\n",
      "3\r\nabc\r\nzz\r\n",
      "FFFFF\r\nabc",
  };
  for (const std::string& t : texts) {
    SCOPED_TRACE(t);
    const Decoded whole = decode(t, 100);
    for (size_t step = 1; step < t.size(); ++step) {
      const Decoded d = decode(t, 100, step);
      EXPECT_EQ(d.result, whole.result);
      EXPECT_EQ(d.consumed, whole.consumed);
      EXPECT_EQ(d.out, whole.out);
      EXPECT_EQ(d.status, whole.status);
      EXPECT_EQ(d.why, whole.why);
    }
  }
}

TEST(HttpChunkedDecoder, ExtensionsAndTrailersAreIgnored) {
  Decoded d = decode("3;name=value;flag\r\nabc\r\n2 ; x=\"q\"\r\nde\r\n0;last\r\nA: 1\r\nB-2:  x \r\n\r\n");
  ASSERT_EQ(d.result, ChunkResult::Done) << d.why;
  EXPECT_EQ(d.out, "abcde");
  EXPECT_EQ(decode("3 \r\nabc\r\n0\r\n\r\n").status, 400);      // whitespace, no ';'
  EXPECT_EQ(decode("3x\r\nabc\r\n0\r\n\r\n").status, 400);      // junk after the size
  EXPECT_EQ(decode("0\r\nBad : x\r\n\r\n").status, 400);        // trailer field syntax
  EXPECT_EQ(decode("0\r\nA: 1\n\r\n").status, 400);             // trailer with a bare LF
  EXPECT_EQ(decode("0\r\n folded\r\n\r\n").status, 400);        // obs-fold
  EXPECT_EQ(decode("3;\x01\r\nabc\r\n0\r\n\r\n").status, 400);  // control byte in an extension
}

TEST(HttpChunkedDecoder, RefusesBadSizes) {
  Decoded d = decode("xyz\r\n");
  EXPECT_EQ(d.status, 400);
  EXPECT_EQ(d.why, "chunk size: 'xyz' is not a hexadecimal size");
  EXPECT_EQ(decode("\r\n").status, 400);
  EXPECT_EQ(decode("-1\r\n").status, 400);
  EXPECT_EQ(decode("+1\r\n").status, 400);
  EXPECT_EQ(decode("0x5\r\nabcde\r\n").status, 400);
  d = decode("00000000000000001\r\n");  // 17 digits
  EXPECT_EQ(d.status, 400);
  EXPECT_EQ(d.why, "chunk size: more than 16 hex digits");
  EXPECT_EQ(decode("FFFFFFFFFFFFFFFF\r\n").status, 413);   // 16 digits parse; over max_body
  EXPECT_EQ(decode("5\nabcde\r\n0\r\n\r\n").status, 400);  // bare LF after the size
}

TEST(HttpChunkedDecoder, NeedsCrlfAfterTheData) {
  Decoded d = decode("3\r\nabcd\r\n");
  EXPECT_EQ(d.status, 400);
  EXPECT_EQ(d.why, "chunk data: expected CRLF after the chunk's data, got byte 0x64");
  EXPECT_EQ(d.out, "abc");
  EXPECT_EQ(decode("3\r\nabc\n0\r\n\r\n").status, 400);
  EXPECT_EQ(decode("3\r\nabc\r0\r\n\r\n").status, 400);
  d = decode("3\r\nabc\r\n");
  EXPECT_EQ(d.result, ChunkResult::NeedMore);
  EXPECT_EQ(d.consumed, 8u);
}

TEST(HttpChunkedDecoder, SizeLineLimitAtAndOverTheBound) {
  const std::string ext_ok = "3;" + std::string(1024 - 4, 'e');  // + CRLF = 1024 bytes
  Decoded d = decode(ext_ok + "\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(d.result, ChunkResult::Done) << d.why;
  d = decode(ext_ok + "e\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(d.status, 400);
  EXPECT_EQ(d.why, "chunk size line: longer than 1024 bytes");
  // Seen without waiting for the line end.
  EXPECT_EQ(decode("3;" + std::string(5000, 'e'), 100, 100).status, 400);
}

TEST(HttpChunkedDecoder, TrailerLimitAtAndOverTheBound) {
  // Trailer lines and the final CRLF: 8192 bytes at most.
  const std::string field = "X: " + std::string(8192 - 2 - 5, 'v') + "\r\n";  // + "\r\n" = 8192
  EXPECT_EQ(decode("0\r\n" + field + "\r\n").result, ChunkResult::Done);
  const Decoded d = decode("0\r\nX" + field + "\r\n");
  EXPECT_EQ(d.status, 400);
  EXPECT_EQ(d.why, "chunked trailer section: longer than 8192 bytes");
}

TEST(HttpChunkedDecoder, BodyLimitAtAndOverTheBound) {
  Decoded d = decode("4\r\nabcd\r\n6\r\nefghij\r\n0\r\n\r\n", 10);
  ASSERT_EQ(d.result, ChunkResult::Done) << d.why;
  EXPECT_EQ(d.out, "abcdefghij");
  d = decode("4\r\nabcd\r\n7\r\nefghijk\r\n0\r\n\r\n", 10);
  EXPECT_EQ(d.result, ChunkResult::Error);
  EXPECT_EQ(d.status, 413);
  EXPECT_EQ(d.out, "abcd");  // refused at the size line, before its data
  EXPECT_EQ(decode("1\r\na\r\n0\r\n\r\n", 0).status, 413);
  EXPECT_EQ(decode("0\r\n\r\n", 0).result, ChunkResult::Done);
}

TEST(HttpChunkedDecoder, StaysInErrorOrDoneUntilReset) {
  HttpChunkedDecoder d(100);
  std::string out;
  size_t used = 0;
  EXPECT_EQ(d.feed(bytes("z\r\n"), used, out), ChunkResult::Error);
  EXPECT_EQ(d.status(), 400);
  EXPECT_EQ(d.feed(bytes("1\r\na\r\n0\r\n\r\n"), used, out), ChunkResult::Error);
  EXPECT_EQ(used, 0u);
  d.reset();
  EXPECT_EQ(d.status(), 0);
  EXPECT_EQ(d.feed(bytes("1\r\na\r\n0\r\n\r\nrest"), used, out), ChunkResult::Done);
  EXPECT_EQ(used, 11u);
  EXPECT_EQ(out, "a");
  EXPECT_EQ(d.body_size(), 1u);
  EXPECT_EQ(d.feed(bytes("rest"), used, out), ChunkResult::Done);
  EXPECT_EQ(used, 0u);
}

// A head that arrives whole goes through in one pass (parse_whole); every other way in is the
// line-by-line parse. The two agree on heads that pass and on every kind of refusal, at the
// bounds of the limits and with values long enough for the word-wide scan of a value (tabs,
// obs-text, DEL and control bytes past the first sixteen bytes, a bare CR, bare LFs).
TEST(HttpRequestHeadParser, WholeHeadAndLineByLineAgree) {
  const std::string ua =
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0";
  const std::string texts[] = {
      "GET /live/cam.m3u8 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: keep-alive\r\nUser-Agent: " + ua +
          "\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate, br\r\n\r\n",
      "GET / HTTP/1.0\nHost: h\nUser-Agent: " + ua + "\n\nNEXT",
      "GET / HTTP/1.1\r\nHost: h\r\nX-Tabs: \tone\ttwo\t three \t\r\nX-Empty:\r\nX-Spaces:    \r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nX-Obs: caf\xc3\xa9 \xff\xfe the rest of a long value\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nX-Del: 0123456789abcdef0123\x7f\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nX-Ctl: 0123456789abcdef0123\x01\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nX-Cr: 0123456789abcdef0123\rx\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nX-Cr-End: 0123456789abcdef\r\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nNo-Colon 0123456789abcdef\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\n Folded: x\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n",
      "GET / HTTP/1.1\r\nHOST: h\r\nCONNECTION: CLOSE\r\nContent-Length: 5\r\n\r\nhello",
      "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: h\r\ntransfer-encoding: chunked\r\nexpect: 100-continue\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\n\r",
      "GET / HTTP/1.1\r\nHost: h\r\n\rX",
      "GET / HTTP/1.1\r\nHost: h\r\n",
      "GET / HTTP/1.1\r",
      "GET / HTTP/1.2\r\n\r\n",
      "GET  / HTTP/1.1\r\n\r\n",
      "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
  };
  HttpParseLimits small;
  small.max_head = 64;
  small.max_target = 8;
  small.max_headers = 2;
  for (const HttpParseLimits& lim : {HttpParseLimits{}, small}) {
    for (const std::string& t : texts) {
      SCOPED_TRACE(t);
      const std::string whole = summary(parse(t, lim));
      EXPECT_EQ(summary(parse(t, lim, 1)), whole);
      EXPECT_EQ(summary(parse(t, lim, 7)), whole);
    }
  }
  // Each limit at and one past its bound, whole and byte by byte.
  const std::string head = "GET /abc HTTP/1.1\r\nHost: h\r\nA: 1\r\n\r\n";
  for (size_t max_head : {head.size() - 1, head.size()}) {
    for (size_t max_target : {size_t{3}, size_t{4}}) {
      for (size_t max_headers : {size_t{1}, size_t{2}}) {
        const HttpParseLimits lim{max_head, max_target, max_headers};
        EXPECT_EQ(summary(parse(head, lim)), summary(parse(head, lim, 1)))
            << max_head << " " << max_target << " " << max_headers;
      }
    }
  }
  const HttpParseLimits exact{head.size(), 4, 2};
  EXPECT_EQ(status_of(head, exact), 0);
}
