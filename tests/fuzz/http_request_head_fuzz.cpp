// Fuzz target: HttpRequestHeadParser and HttpChunkedDecoder (protocol/http_request_head.h).
// The input is what a client sends on one connection: request heads, each followed by its body
// (Content-Length bytes skipped, chunked bodies decoded), up to a few pipelined requests. The
// input is also fed to a chunked decoder alone.
// Invariants: no crash; method, target and fields view the head's own bytes, and a copy's view
// its copy of them; the same trace (results, heads, error statuses and reasons, decoded
// bodies, where each request ended) whether the bytes come whole, cut in two at a point derived
// from the first byte, or byte by byte; NeedMore consumes everything it is given and never
// buffers more than max_head bytes; Complete means consumed <= input and a non-empty token method
// and visible-ASCII target within max_target, never both chunked and Content-Length; a refused
// head says why with 400, 414, 431, 501 or 505; a refused body with 400 or 413; a decoded body
// never passes max_body.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rill/protocol/http_request_head.h"

using rill::protocol::HttpChunkedDecoder;
using rill::protocol::HttpParseLimits;
using rill::protocol::HttpRequestHead;
using rill::protocol::HttpRequestHeadParser;
using rill::protocol::HttpVersion;

namespace {

constexpr size_t kMaxBody = 300;
constexpr size_t kMaxRequests = 8;
constexpr size_t kMaxBytewise = 4096;

void check(bool ok) {
  if (!ok) std::abort();
}

bool is_tchar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

std::string describe(const HttpRequestHead& h) {
  std::string s = std::string(h.method) + ' ' + std::string(h.target) +
                  (h.version == HttpVersion::Http10 ? " 1.0" : " 1.1");
  for (const auto& f : h.headers) s += '|' + std::string(f.name) + ':' + std::string(f.value);
  s += h.content_length ? " cl=" + std::to_string(*h.content_length) : " cl=-";
  s += h.chunked ? " chunked" : "";
  s += h.keep_alive ? " ka" : " close";
  s += h.expect_continue ? " 100" : "";
  s += h.has_host ? " host" : "";
  return s;
}

// Whether `v` lies in `bytes`.
bool inside(std::string_view v, std::string_view bytes) {
  const auto at = reinterpret_cast<uintptr_t>(v.data()), from = reinterpret_cast<uintptr_t>(bytes.data());
  return at >= from && at + v.size() <= from + bytes.size();
}

// The method, target and fields view the head's own bytes, which end with the blank line.
void check_views(const HttpRequestHead& h) {
  const std::string_view b = h.bytes();
  check(b.starts_with(h.method) && (b.ends_with("\n\n") || b.ends_with("\n\r\n")));
  check(inside(h.method, b) && inside(h.target, b));
  for (const auto& f : h.headers) check(inside(f.name, b) && inside(f.value, b));
}

void check_head(const HttpRequestHead& h, const HttpParseLimits& lim) {
  check(!h.method.empty() && !h.target.empty());
  for (unsigned char c : h.method) check(is_tchar(c));
  check(h.target.size() <= lim.max_target);
  for (unsigned char c : h.target) check(c >= 0x21 && c <= 0x7e);
  check(h.headers.size() <= lim.max_headers);
  for (const auto& f : h.headers) {
    check(!f.name.empty());
    for (unsigned char c : f.name) check(is_tchar(c));
    for (unsigned char c : f.value) check(c >= 0x20 ? c != 0x7f : c == '\t');
    if (!f.value.empty()) check(f.value.front() != ' ' && f.value.back() != ' ');
  }
  check_views(h);
  // A copy views its own bytes and reads the same, after the original is gone.
  auto copy = std::make_unique<HttpRequestHead>(h);
  const HttpRequestHead again = *copy;
  copy.reset();
  check_views(again);
  check(again.bytes().data() != h.bytes().data() && describe(again) == describe(h));
  check(!(h.chunked && h.content_length));
  if (h.chunked) check(h.version == HttpVersion::Http11);
  if (h.version == HttpVersion::Http10) check(!h.expect_continue);
}

// A connection's bytes, in the pieces given, through heads and bodies; returns what happened.
std::string run_connection(std::span<const uint8_t> data, const std::vector<size_t>& cuts,
                           const HttpParseLimits& lim) {
  enum class Stage { Head, Length, Chunked, Stop } stage = Stage::Head;
  HttpRequestHeadParser parser(lim);
  HttpChunkedDecoder decoder(kMaxBody);
  std::string trace, body;
  uint64_t length_left = 0;
  size_t offset = 0, requests = 0;
  bool keep_alive = true;
  auto next_request = [&] {
    parser.reset();
    decoder.reset();
    body.clear();
    stage = ++requests == kMaxRequests || !keep_alive ? Stage::Stop : Stage::Head;
  };
  size_t from = 0;
  for (size_t i = 0; i <= cuts.size() && stage != Stage::Stop; ++i) {
    const size_t to = i < cuts.size() ? cuts[i] : data.size();
    std::span<const uint8_t> rest = data.subspan(from, to - from);
    from = to;
    while (!rest.empty() && stage != Stage::Stop) {
      size_t used = 0;
      if (stage == Stage::Head) {
        const auto r = parser.feed(rest, used);
        check(used <= rest.size());
        check(parser.buffered() <= lim.max_head);
        if (r == HttpRequestHeadParser::Result::NeedMore) check(used == rest.size());
        if (r == HttpRequestHeadParser::Result::Complete) {
          check(used > 0);
          const HttpRequestHead& h = parser.head();
          check_head(h, lim);
          trace += "head " + describe(h) + " @" + std::to_string(offset + used) + '\n';
          keep_alive = h.keep_alive;
          if (h.chunked) {
            stage = Stage::Chunked;
          } else if (h.content_length.value_or(0) > 0) {
            stage = Stage::Length;
            length_left = *h.content_length;
          } else {
            next_request();
          }
        } else if (r == HttpRequestHeadParser::Result::Error) {
          const int s = parser.error().status;
          check(s == 400 || s == 414 || s == 431 || s == 501 || s == 505);
          check(!parser.error().why.empty());
          trace += "refused " + std::to_string(s) + ' ' + parser.error().why + '\n';
          stage = Stage::Stop;
        }
      } else if (stage == Stage::Length) {
        used = static_cast<size_t>(std::min<uint64_t>(length_left, rest.size()));
        length_left -= used;
        if (length_left == 0) {
          trace += "body @" + std::to_string(offset + used) + '\n';
          next_request();
        }
      } else {
        const auto r = decoder.feed(rest, used, body);
        check(used <= rest.size());
        check(body.size() <= kMaxBody && decoder.body_size() == body.size());
        if (r == HttpChunkedDecoder::Result::NeedMore) check(used == rest.size() && decoder.status() == 0);
        if (r == HttpChunkedDecoder::Result::Done) {
          check(used > 0 && decoder.status() == 0);
          trace += "chunked " + body + " @" + std::to_string(offset + used) + '\n';
          next_request();
        } else if (r == HttpChunkedDecoder::Result::Error) {
          check(decoder.status() == 400 || decoder.status() == 413);
          check(!decoder.why().empty());
          trace += "body refused " + std::to_string(decoder.status()) + ' ' + decoder.why() + '\n';
          stage = Stage::Stop;
        }
      }
      offset += used;
      rest = rest.subspan(used);
    }
  }
  if (stage == Stage::Head) trace += "waiting, " + std::to_string(parser.buffered()) + " buffered\n";
  if (stage == Stage::Length) trace += "waiting for " + std::to_string(length_left) + " body bytes\n";
  if (stage == Stage::Chunked) trace += "waiting for chunks, " + body + '\n';
  return trace;
}

// The bytes as a chunked body alone.
std::string run_decoder(std::span<const uint8_t> data, const std::vector<size_t>& cuts) {
  HttpChunkedDecoder d(kMaxBody);
  std::string out;
  size_t from = 0, total = 0;
  auto r = HttpChunkedDecoder::Result::NeedMore;
  for (size_t i = 0; i <= cuts.size() && r == HttpChunkedDecoder::Result::NeedMore; ++i) {
    const size_t to = i < cuts.size() ? cuts[i] : data.size();
    size_t used = 0;
    r = d.feed(data.subspan(from, to - from), used, out);
    check(used <= to - from && out.size() <= kMaxBody);
    if (r == HttpChunkedDecoder::Result::NeedMore) check(used == to - from);
    if (r == HttpChunkedDecoder::Result::Error) check(d.status() == 400 || d.status() == 413);
    total += used;
    from = to;
  }
  check(total <= data.size());
  return std::to_string(static_cast<int>(r)) + ' ' + std::to_string(d.status()) + ' ' + d.why() + ' ' + out +
         " @" + std::to_string(total);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  // The cut: anywhere in the input, chosen by its first byte (which is still part of the input).
  const std::vector<size_t> whole;
  const std::vector<size_t> two = {size == 0 ? 0 : size * data[0] / 255};
  std::vector<size_t> bytewise;
  if (size <= kMaxBytewise) {
    for (size_t i = 1; i < size; ++i) bytewise.push_back(i);
  }

  HttpParseLimits tiny;
  tiny.max_head = 160;
  tiny.max_target = 24;
  tiny.max_headers = 4;
  for (const HttpParseLimits& lim : {HttpParseLimits{}, tiny}) {
    const std::string a = run_connection(in, whole, lim);
    check(run_connection(in, two, lim) == a);
    if (!bytewise.empty()) check(run_connection(in, bytewise, lim) == a);
  }

  const std::string d = run_decoder(in, whole);
  check(run_decoder(in, two) == d);
  if (!bytewise.empty()) check(run_decoder(in, bytewise) == d);
  return 0;
}
