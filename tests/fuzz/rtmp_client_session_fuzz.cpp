// Fuzzes RtmpClientSession with arbitrary server bytes after a completed handshake.
//
// Input layout: byte 0 = flags (bit 0: publish instead of play; bit 1: header-only media with a
// 16-byte prefix; bit 2: complex handshake; bits 4-7: log2 of the largest feed piece); the rest
// is the server's chunk stream, fed in pieces while the clock advances.
//
// Checked: feed() never throws (malformed input is a Failed state with a reason), the state only
// moves forward, media respects the prefix, and everything the client writes is a well-formed
// chunk stream that our own ChunkReader parses, with valid AMF0 commands.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "rill/protocol/chunk_reader.h"
#include "rill/protocol/error.h"
#include "rill/protocol/rtmp_client_session.h"
#include "rill/protocol/rtmp_command.h"
#include "rill/protocol/rtmp_handshake.h"

using namespace rill;
using namespace rill::protocol;

namespace {

RandomFill lcg(uint32_t seed) {
  return [seed](std::span<uint8_t> out) mutable {
    for (auto& b : out) {
      seed = seed * 1103515245u + 12345u;
      b = static_cast<uint8_t>(seed >> 16);
    }
  };
}

struct Events : RtmpClientEvents {
  RtmpClientState last = RtmpClientState::Idle;
  uint32_t prefix = 0;
  RtmpClientSession* session = nullptr;

  void on_state(RtmpClientState s) override {
    // Failed and Closed are terminal; otherwise states only move forward.
    if (last == RtmpClientState::Failed || last == RtmpClientState::Closed) abort();
    if (s != RtmpClientState::Failed && s != RtmpClientState::Closed && s <= last) abort();
    if (s == RtmpClientState::Failed && session->failure().kind == RtmpClientFailure::Kind::None) abort();
    last = s;
    if (s == RtmpClientState::Streaming && session->options().role == RtmpClientRole::Publish) {
      BufferRef body = SharedBuffer::copy_of(std::string_view("\x17\x01\x00\x00\x00media"));
      if (!session->send_media(9, 0, body)) abort();
    }
  }
  void on_media(RtmpMessage&& m, uint32_t length) override {
    if (m.payload.size() > length) abort();
    if (prefix && ChunkReader::truncatable(m.type_id) && m.payload.size() > prefix) abort();
  }
};

// What the client writes after the handshake must parse: chunks, then AMF0 commands.
struct OutputChecker {
  ChunkReader reader{[](RtmpMessage&& m) {
    if (m.type_id == msg_type::CommandAmf0) (void)parse_command(m.payload.span());
  }};

  void check(RtmpClientSession& s) {
    for (const BufferRef& b : s.take_output()) {
      if (b.size() == 0) abort();
      try {
        reader.feed(b.span());
      } catch (const ProtocolError&) {
        abort();
      }
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  const size_t max_piece = size_t{1} << (flags >> 4);
  std::span<const uint8_t> in(data + 1, size - 1);

  RtmpClientOptions o;
  o.role = flags & 1 ? RtmpClientRole::Publish : RtmpClientRole::Play;
  o.app = "live";
  o.tc_url = "rtmp://127.0.0.1/live";
  o.stream = std::string("s");  // not = "s": GCC 12 warns -Wrestrict on that (a false positive)
  o.media_prefix = flags & 2 ? 16 : 0;
  o.complex_handshake = flags & 4;
  o.connect_timeout_ms = 1000;
  o.random = lcg(1);
  o.reader_limits.max_message_size = 1 << 20;
  o.reader_limits.max_partial_bytes = 4 << 20;
  Events ev;
  ev.prefix = o.media_prefix;
  RtmpClientSession s(o, ev);
  ev.session = &s;
  s.start(0);

  // A real server handshake, so the input starts right after S2.
  static HandshakeMac mac;  // as a worker keeps one for all its handshakes
  ServerHandshake server(lcg(2), mac);
  for (const BufferRef& b : s.take_output()) server.feed(b.span());  // C0C1
  BufferRef s012 = server.take_output();
  s.feed(s012.span());
  if (s.state() != RtmpClientState::Connecting) abort();
  std::vector<BufferRef> first = s.take_output();  // C2, connect
  if (first.empty() || server.feed(first[0].span()) != first[0].size() || !server.done()) abort();
  OutputChecker out;
  for (size_t i = 1; i < first.size(); ++i) out.reader.feed(first[i].span());

  uint32_t rng = 0x9E3779B9u ^ flags;
  int64_t now = 0;
  for (size_t pos = 0; pos < in.size();) {
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    size_t n = std::min<size_t>(in.size() - pos, 1 + rng % max_piece);
    s.feed(in.subspan(pos, n));
    pos += n;
    now += 7;
    s.poll(now);
    out.check(s);
  }
  s.poll(now + 2000);  // past the connect timeout
  if (s.state() != RtmpClientState::Streaming && s.state() != RtmpClientState::Failed) abort();
  s.close();
  out.check(s);
  return 0;
}
