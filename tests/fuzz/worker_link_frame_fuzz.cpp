// Fuzzes the relay framing (protocol/worker_link_frame.h). Input layout: byte 0 picks the feed piece
// sizes; byte 1 bit 0 selects the mode: 0 = a frame stream (the rest is fed to a
// LinkFrameReader in pieces; every frame is re-encoded and read back by a second reader, which
// must reproduce it exactly), 1 = request lines (the rest, split at '\n'; a parsed request — or HLS object name — is
// formatted and parsed again and must come back the same).
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

void round_trip_frame(const LinkFrame& f, const LinkReaderLimits& lim) {
  if (f.body.size() != f.header.length) abort();
  const bool media = is_link_media(f.header.type) || f.header.type == LinkFrameType::HlsObject;
  if (f.header.length > (media ? lim.max_body : lim.max_control_body)) abort();
  BufferRef head = link_header_buffer(f.header);
  if (head.size() != kLinkHeaderSize) abort();
  size_t got = 0;
  LinkFrameReader back([&](LinkFrame&& r) {
    ++got;
    if (r.header.type != f.header.type || r.header.flags != f.header.flags || r.header.timestamp != f.header.timestamp ||
        r.header.length != f.header.length || r.body.size() != f.body.size() ||
        (f.body.size() && std::memcmp(r.body.data(), f.body.data(), f.body.size()) != 0)) {
      abort();
    }
  }, lim);
  back.feed(head.span());
  back.feed(f.body.span());
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
      LinkRequest r = parse_link_request(line);
      std::string again = format_link_request(r);
      if (again.empty() || again.back() != '\n') abort();
      LinkRequest r2 = parse_link_request(std::string_view(again).substr(0, again.size() - 1));
      if (r2.kind != r.kind || r2.app != r.app || r2.name != r.name || r2.object != r.object) abort();
      if (r.kind == LinkRequest::Kind::Hls) {
        auto o = parse_hls_object(r.object);  // the parser accepts only valid objects
        if (!o || format_hls_object(*o) != r.object) abort();
      }
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
  lim.max_control_body = 1024;
  uint64_t frames = 0;
  LinkFrameReader reader([&](LinkFrame&& f) {
    ++frames;
    round_trip_frame(f, lim);
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
