// Fuzzes the worker-link framing (protocol/worker_link_frame.h). Input layout: byte 0 picks the
// feed piece sizes; byte 1 bit 0 selects the mode: 0 = a frame stream (the rest is fed to a
// LinkFrameReader in pieces; every typed message is re-encoded and read back by a second reader,
// which must reproduce it exactly), 1 = request lines (the rest, split at '\n'; a parsed request
// — or HLS object name — is formatted and parsed again and must come back the same).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>

#include "rill/protocol/error.h"
#include "rill/protocol/worker_link_frame.h"

using namespace rill;
using namespace rill::protocol;

namespace {

bool same_bytes(const BufferRef& a, const BufferRef& b) {
  return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

bool same(const LinkMessage& a, const LinkMessage& b) {
  if (a.index() != b.index()) return false;
  if (const auto* m = std::get_if<LinkMedia>(&a)) {
    const auto& n = std::get<LinkMedia>(b);
    return m->type == n.type && m->flags == n.flags && m->timestamp == n.timestamp && same_bytes(m->body, n.body);
  }
  if (const auto* h = std::get_if<LinkHlsObject>(&a)) {
    const auto& g = std::get<LinkHlsObject>(b);
    return h->head == g.head && same_bytes(h->body, g.body);
  }
  if (const auto* e = std::get_if<LinkError>(&a)) return e->reason == std::get<LinkError>(b).reason;
  if (const auto* s = std::get_if<LinkStats>(&a)) return s->json == std::get<LinkStats>(b).json;
  return true;  // Publish, Unpublish, End carry nothing
}

void round_trip(const LinkMessage& m, const LinkReaderLimits& lim) {
  if (const auto* media = std::get_if<LinkMedia>(&m)) {
    if (!is_link_media(media->type) || media->body.size() > lim.max_body) abort();
  }
  const BufferRef wire = encode_link_message(m);
  size_t got = 0;
  LinkFrameReader back([&](LinkMessage&& r) {
    ++got;
    if (!same(r, m)) abort();
  }, lim);
  back.feed(wire.span().first(kLinkHeaderSize));  // in two pieces: the header, then the rest
  back.feed(wire.span().subspan(kLinkHeaderSize));
  if (got != 1 || !back.at_boundary()) abort();
}

void request_lines(std::string_view text) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    try {
      if (auto o = parse_hls_object(line)) {
        if (parse_hls_object(format_hls_object(*o)) != o) abort();
      }
      const LinkRequest r = parse_link_request(line);
      const std::string again = format_link_request(r);
      if (again.empty() || again.back() != '\n') abort();
      if (parse_link_request(std::string_view(again).substr(0, again.size() - 1)) != r) abort();
    } catch (const ProtocolError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint32_t max_piece = 1u << (data[0] & 15);
  uint32_t rng = 0x9E3779B9u ^ (uint32_t(data[0]) << 8) ^ data[1];
  std::span<const uint8_t> in(data + 2, size - 2);
  if (data[1] & 1) {
    request_lines(std::string_view(reinterpret_cast<const char*>(in.data()), in.size()));
    return 0;
  }
  LinkReaderLimits lim;
  lim.max_body = 1 << 20;
  lim.max_stats_body = 1 << 16;
  lim.max_error_body = 1024;
  uint64_t frames = 0;
  LinkFrameReader reader([&](LinkMessage&& m) {
    ++frames;
    round_trip(m, lim);
  }, lim);
  try {
    size_t pos = 0;
    while (pos < in.size()) {
      rng ^= rng << 13;
      rng ^= rng >> 17;
      rng ^= rng << 5;
      size_t n = std::min<size_t>(in.size() - pos, 1 + rng % max_piece);
      if (reader.feed(in.subspan(pos, n)) != n) abort();
      pos += n;
    }
    if (reader.frames() != frames || reader.bytes() != in.size()) abort();
  } catch (const ProtocolError&) {
  }
  return 0;
}
