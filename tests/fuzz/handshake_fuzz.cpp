// Fuzzes the server handshake (C0C1 + C2 from the input) and then the chunk reader with whatever
// follows C2, as a connection on the RTMP port would see it. The same input is also given to a
// client handshake as S0S1S2. ProtocolError is the expected way to refuse bad input.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "rill/protocol/chunk_reader.h"
#include "rill/protocol/error.h"
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
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static HandshakeMac mac;  // as a worker keeps one for all its handshakes
  std::span<const uint8_t> in(data, size);
  try {
    ServerHandshake hs(lcg(1), mac);
    // Feed in two pieces (the split derived from the size) to exercise the incremental path.
    size_t split = size ? (size_t(data[size - 1]) * 131) % (size + 1) : 0;
    size_t used = hs.feed(in.first(split));
    if (used == split) used += hs.feed(in.subspan(split));
    if (used > size) abort();
    if (hs.state() != ServerHandshake::State::NeedC0C1) {
      BufferRef out = hs.take_output();
      if (!out || out->size() != 1 + 2 * kHandshakeSize) abort();
    }
    if (hs.done()) {
      ChunkReaderLimits limits;
      limits.max_message_size = 1 << 20;
      limits.max_partial_bytes = 4 << 20;
      size_t count = 0;
      ChunkReader reader([&count](RtmpMessage&& m) {
        ++count;
        if (m.payload.size() > (1u << 20)) abort();
      }, limits);
      if (reader.feed(in.subspan(used)) != size - used) abort();
    } else if (used != size) {
      abort();  // bytes left over although the handshake is not done
    }
  } catch (const ProtocolError&) {
  }
  try {
    ClientHandshake client(lcg(2), mac);
    client.take_output();
    size_t used = client.feed(in);
    if (client.state() != ClientHandshake::State::NeedS0S1 && !client.has_output()) abort();
    if (!client.done() && used != size) abort();
    (void)client.server_digest_ok();
  } catch (const ProtocolError&) {
  }
  return 0;
}
