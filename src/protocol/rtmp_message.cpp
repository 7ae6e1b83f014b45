#include "rill/protocol/rtmp_message.h"

#include <string>

#include "rill/core/byte_order.h"
#include "rill/protocol/error.h"

namespace rill::protocol {
namespace {

std::string hex32(uint32_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(8, '0');
  for (int i = 0; i < 8; ++i) s[i] = kHex[(v >> (28 - 4 * i)) & 0xF];
  return s;
}

BufferRef be32_payload(uint32_t v) {
  BufferRef b = SharedBuffer::create(4);
  store_be32(b->tail(), v);
  b->commit(4);
  return b;
}

void need(std::span<const uint8_t> p, size_t n, const char* what) {
  if (p.size() < n) {
    throw ProtocolError(std::string(what) + ": expected at least " + std::to_string(n) +
                        " payload bytes, got " + std::to_string(p.size()));
  }
}

}  // namespace

BufferRef set_chunk_size_payload(uint32_t chunk_size) {
  // 5.4.1: "The first bit MUST be zero"; 31 bits of chunk size.
  return be32_payload(chunk_size & 0x7FFFFFFFu);
}

BufferRef abort_payload(uint32_t csid) { return be32_payload(csid); }
BufferRef ack_payload(uint32_t sequence_number) { return be32_payload(sequence_number); }
BufferRef window_ack_size_payload(uint32_t window) { return be32_payload(window); }

BufferRef set_peer_bandwidth_payload(uint32_t window, uint8_t limit_type) {
  BufferRef b = SharedBuffer::create(5);
  uint8_t* p = b->tail();
  store_be32(p, window);
  p[4] = limit_type;
  b->commit(5);
  return b;
}

BufferRef user_control_payload(uint16_t event, uint32_t value) {
  BufferRef b = SharedBuffer::create(6);
  uint8_t* p = b->tail();
  store_be16(p, event);
  store_be32(p + 2, value);
  b->commit(6);
  return b;
}

BufferRef user_control_payload(uint16_t event, uint32_t value1, uint32_t value2) {
  BufferRef b = SharedBuffer::create(10);
  uint8_t* p = b->tail();
  store_be16(p, event);
  store_be32(p + 2, value1);
  store_be32(p + 6, value2);
  b->commit(10);
  return b;
}

RtmpMessage control_message(uint8_t type_id, BufferRef payload, uint32_t timestamp) {
  RtmpMessage m;
  m.type_id = type_id;
  m.stream_id = 0;
  m.timestamp = timestamp;
  m.csid = kControlCsid;
  m.payload = std::move(payload);
  return m;
}

uint32_t parse_set_chunk_size(std::span<const uint8_t> payload) {
  need(payload, 4, "Set Chunk Size");
  uint32_t v = load_be32(payload.data());
  // 5.4.1: "The first bit MUST be zero"; "The maximum chunk size can be 65536 bytes and minimum
  // 128 bytes" is advisory (peers use 1..0x7FFFFFFF); a size of 0 can never make progress.
  if (v & 0x80000000u) {
    throw ProtocolError("Set Chunk Size: expected the high bit to be 0, got 0x" + hex32(v));
  }
  if (v == 0) throw ProtocolError("Set Chunk Size: expected a chunk size >= 1, got 0");
  return v;
}

uint32_t parse_abort(std::span<const uint8_t> payload) {
  need(payload, 4, "Abort Message");
  return load_be32(payload.data());
}

uint32_t parse_ack(std::span<const uint8_t> payload) {
  need(payload, 4, "Acknowledgement");
  return load_be32(payload.data());
}

uint32_t parse_window_ack_size(std::span<const uint8_t> payload) {
  need(payload, 4, "Window Acknowledgement Size");
  return load_be32(payload.data());
}

PeerBandwidth parse_set_peer_bandwidth(std::span<const uint8_t> payload) {
  need(payload, 5, "Set Peer Bandwidth");
  PeerBandwidth pb;
  pb.window = load_be32(payload.data());
  pb.limit_type = payload[4];
  if (pb.limit_type > bw_limit::Dynamic) {
    throw ProtocolError("Set Peer Bandwidth: expected limit type 0..2, got " +
                        std::to_string(pb.limit_type));
  }
  return pb;
}

UserControlEvent parse_user_control(std::span<const uint8_t> payload) {
  need(payload, 2, "User Control Message");
  UserControlEvent ev;
  ev.event = uint16_t((payload[0] << 8) | payload[1]);
  size_t required = 0;
  switch (ev.event) {
    case uc_event::StreamBegin:
    case uc_event::StreamEOF:
    case uc_event::StreamDry:
    case uc_event::StreamIsRecorded:
    case uc_event::PingRequest:
    case uc_event::PingResponse:
      required = 6;
      break;
    case uc_event::SetBufferLength:
      required = 10;
      break;
    default:
      break;
  }
  if (required) {
    need(payload, required,
         ("User Control event " + std::to_string(ev.event)).c_str());
  }
  if (payload.size() >= 6) ev.value1 = load_be32(payload.data() + 2);
  if (payload.size() >= 10) ev.value2 = load_be32(payload.data() + 6);
  return ev;
}

std::vector<RtmpMessage> split_aggregate(const RtmpMessage& agg) {
  // 7.1.6: "The message stream ID of the aggregate message overrides the message stream IDs of
  // the sub-messages inside the aggregate. The difference between the timestamps of the aggregate
  // message and the first sub-message is the offset used to renormalize the timestamps of the
  // sub-messages to the stream timescale. The back pointer contains the size of the previous
  // message including its header."
  std::vector<RtmpMessage> out;
  std::span<const uint8_t> p = agg.payload.span();
  size_t pos = 0;
  bool first = true;
  uint32_t offset = 0;
  while (pos < p.size()) {
    size_t left = p.size() - pos;
    if (left < 11) {
      throw ProtocolError("aggregate message: expected an 11-byte sub-message header at offset " +
                          std::to_string(pos) + ", only " + std::to_string(left) + " bytes left");
    }
    const uint8_t* h = p.data() + pos;
    uint32_t len = load_be24(h + 1);
    // FLV-style timestamp: 3 low bytes then the high byte.
    uint32_t ts = load_be24(h + 4) | (uint32_t(h[7]) << 24);
    if (len > left - 11) {
      throw ProtocolError("aggregate message: sub-message at offset " + std::to_string(pos) +
                          " announces " + std::to_string(len) + " bytes, only " +
                          std::to_string(left - 11) + " left");
    }
    if (first) {
      offset = agg.timestamp - ts;  // wraps mod 2^32
      first = false;
    }
    RtmpMessage m;
    m.type_id = h[0];
    m.stream_id = agg.stream_id;
    m.timestamp = ts + offset;
    m.csid = agg.csid;
    m.payload = SharedBuffer::copy_of(p.subspan(pos + 11, len));
    out.push_back(std::move(m));
    pos += 11 + size_t(len);
    left = p.size() - pos;
    // Back pointer (4 bytes). Its value is not checked: encoders disagree about it.
    if (left >= 4) {
      pos += 4;
    } else if (left != 0) {
      throw ProtocolError("aggregate message: expected a 4-byte back pointer at offset " +
                          std::to_string(pos) + ", only " + std::to_string(left) + " bytes left");
    }
  }
  return out;
}

}  // namespace rill::protocol
