// Fuzzes the chunk reader with small limits. Input layout: byte 0 picks the feed piece sizes,
// byte 1 the chunk size used to re-serialize; the rest is the chunk stream, fed in pieces.
// Every message is parsed as the session would (control messages, user control events,
// aggregates), and re-serialized with ChunkWriter and read back by a second reader, which must
// reproduce it exactly.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "rill/protocol/chunk_reader.h"
#include "rill/protocol/chunk_writer.h"
#include "rill/protocol/error.h"
#include "rill/protocol/rtmp_message.h"

using namespace rill;
using namespace rill::protocol;

namespace {

void parse_as_session(const RtmpMessage& m) {
  try {
    switch (m.type_id) {
      case msg_type::Ack: parse_ack(m.payload.span()); break;
      case msg_type::WindowAckSize: parse_window_ack_size(m.payload.span()); break;
      case msg_type::SetPeerBandwidth: parse_set_peer_bandwidth(m.payload.span()); break;
      case msg_type::UserControl: parse_user_control(m.payload.span()); break;
      case msg_type::Aggregate: {
        size_t total = 0;
        for (const RtmpMessage& sub : split_aggregate(m)) {
          total += sub.payload.size() + 11;
          if (sub.stream_id != m.stream_id || sub.csid != m.csid) abort();
        }
        if (total > m.payload.size()) abort();
        break;
      }
      default: break;
    }
  } catch (const ProtocolError&) {
  }
}

// Writer -> reader must reproduce the message.
void round_trip(const RtmpMessage& m, uint32_t chunk_size) {
  if (m.type_id == msg_type::SetChunkSize || m.type_id == msg_type::Abort) return;
  size_t got = 0;
  ChunkReaderLimits limits;
  limits.max_message_size = 1 << 20;
  ChunkReader back([&](RtmpMessage&& r) {
    if (r.type_id == msg_type::SetChunkSize) return;
    ++got;
    if (r.type_id != m.type_id || r.stream_id != m.stream_id || r.timestamp != m.timestamp ||
        r.csid != m.csid || r.payload.size() != m.payload.size() ||
        (m.payload.size() &&
         std::memcmp(r.payload.data(), m.payload.data(), m.payload.size()) != 0)) {
      abort();
    }
  }, limits);
  BufferRef scs = ChunkWriter::serialize(
      control_message(msg_type::SetChunkSize, set_chunk_size_payload(chunk_size)), 128);
  back.feed(scs.span());
  BufferRef wire = ChunkWriter::serialize(m, chunk_size);
  if (wire->size() != ChunkWriter::serialized_size(m.payload.size(), chunk_size, m.csid,
                                                   m.timestamp)) {
    abort();
  }
  back.feed(wire.span());
  if (got != 1) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint32_t max_piece = 1u << (data[0] & 15);
  uint32_t rng = 0x9E3779B9u ^ (uint32_t(data[0]) << 8) ^ data[1];
  const uint32_t chunk_size = 16 + uint32_t(data[1]) * 128;
  std::span<const uint8_t> in(data + 2, size - 2);

  ChunkReaderLimits limits;
  limits.max_message_size = 1 << 20;
  limits.max_partial_bytes = 4 << 20;
  limits.max_partial_messages = 16;
  limits.max_chunk_streams = 32;
  ChunkReader reader([&](RtmpMessage&& m) {
    if (m.payload.size() > limits.max_message_size) abort();
    parse_as_session(m);
    round_trip(m, chunk_size);
  }, limits);
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
    if (reader.bytes_received() != in.size()) abort();
  } catch (const ProtocolError&) {
  }
  return 0;
}
