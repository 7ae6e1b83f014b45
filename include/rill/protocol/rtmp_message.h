#pragma once
// RTMP messages (RTMP spec 1.0, section 5.4 "Protocol Control Messages", 6.2 "User Control
// Messages", 7.1 "Types of Messages"): the message struct that the chunk reader produces and the
// chunk writer consumes, the type ids, and byte-exact builders/parsers for the control messages.
//
// All parsers throw rill::protocol::ProtocolError on short or invalid payloads.
#include <cstdint>
#include <span>
#include <vector>

#include "rill/core/buffer.h"

namespace rill::protocol {

// One complete RTMP message. `timestamp` is absolute (deltas already accumulated, 32-bit wrap);
// `csid` is the chunk stream the message arrived on (reader) or should be sent on (writer).
struct RtmpMessage {
  uint8_t type_id = 0;
  uint32_t stream_id = 0;
  uint32_t timestamp = 0;
  uint32_t csid = 0;
  BufferRef payload;
};

// Message type ids (spec 5.4, 6.2, 7.1).
namespace msg_type {
inline constexpr uint8_t SetChunkSize = 1;
inline constexpr uint8_t Abort = 2;
inline constexpr uint8_t Ack = 3;
inline constexpr uint8_t UserControl = 4;
inline constexpr uint8_t WindowAckSize = 5;
inline constexpr uint8_t SetPeerBandwidth = 6;
inline constexpr uint8_t Audio = 8;
inline constexpr uint8_t Video = 9;
inline constexpr uint8_t DataAmf3 = 15;
inline constexpr uint8_t SharedObjAmf3 = 16;
inline constexpr uint8_t CommandAmf3 = 17;
inline constexpr uint8_t DataAmf0 = 18;
inline constexpr uint8_t SharedObjAmf0 = 19;
inline constexpr uint8_t CommandAmf0 = 20;
inline constexpr uint8_t Aggregate = 22;
}  // namespace msg_type

// User control event ids (spec 7.1.7).
namespace uc_event {
inline constexpr uint16_t StreamBegin = 0;
inline constexpr uint16_t StreamEOF = 1;
inline constexpr uint16_t StreamDry = 2;
inline constexpr uint16_t SetBufferLength = 3;
inline constexpr uint16_t StreamIsRecorded = 4;
inline constexpr uint16_t PingRequest = 6;
inline constexpr uint16_t PingResponse = 7;
}  // namespace uc_event

// Set Peer Bandwidth limit types (spec 5.4.5).
namespace bw_limit {
inline constexpr uint8_t Hard = 0;
inline constexpr uint8_t Soft = 1;
inline constexpr uint8_t Dynamic = 2;
}  // namespace bw_limit

// Chunk stream ids: spec 5.3.1.1 allows 2..65599; 2 is reserved for protocol control messages.
inline constexpr uint32_t kControlCsid = 2;
inline constexpr uint32_t kMinCsid = 2;
inline constexpr uint32_t kMaxCsid = 65599;
// Message length is a 3-byte field in the chunk message header (spec 5.3.1.2.1).
inline constexpr uint32_t kMaxMessageLength = 0xFFFFFF;

// ---- builders: each returns the payload (a new SharedBuffer) ----
BufferRef set_chunk_size_payload(uint32_t chunk_size);           // 5.4.1, 4 bytes
BufferRef abort_payload(uint32_t csid);                          // 5.4.2, 4 bytes
BufferRef ack_payload(uint32_t sequence_number);                 // 5.4.3, 4 bytes
BufferRef window_ack_size_payload(uint32_t window);              // 5.4.4, 4 bytes
BufferRef set_peer_bandwidth_payload(uint32_t window, uint8_t limit_type);  // 5.4.5, 5 bytes
// 7.1.7: event type (2 bytes) + event data. Events 0,1,2,4,6,7 carry one 4-byte value;
// SetBufferLength carries stream id + buffer length in ms.
BufferRef user_control_payload(uint16_t event, uint32_t value);
BufferRef user_control_payload(uint16_t event, uint32_t value1, uint32_t value2);

// A protocol control message ready for the chunk writer: chunk stream 2, message stream 0
// ("Protocol control messages MUST have message stream ID 0 ... and be sent in chunk stream ID 2", 5.4).
RtmpMessage control_message(uint8_t type_id, BufferRef payload, uint32_t timestamp = 0);

// ---- parsers ----
// 5.4.1: 31-bit value, high bit must be 0, value must be >= 1. Does NOT apply a configured
// maximum; the chunk reader does that.
uint32_t parse_set_chunk_size(std::span<const uint8_t> payload);
uint32_t parse_abort(std::span<const uint8_t> payload);             // chunk stream id
uint32_t parse_ack(std::span<const uint8_t> payload);               // sequence number
uint32_t parse_window_ack_size(std::span<const uint8_t> payload);

struct PeerBandwidth {
  uint32_t window = 0;
  uint8_t limit_type = 0;
};
PeerBandwidth parse_set_peer_bandwidth(std::span<const uint8_t> payload);

struct UserControlEvent {
  uint16_t event = 0;
  uint32_t value1 = 0;  // stream id, or ping timestamp
  uint32_t value2 = 0;  // SetBufferLength: buffer length in ms
};
// Known events must carry their full data (ProtocolError otherwise); unknown events (e.g. 31/32
// BufferEmpty/BufferReady, 26/27 SWF verification) are accepted with whatever values are present.
UserControlEvent parse_user_control(std::span<const uint8_t> payload);

// Spec 7.1.6 Aggregate Message: the payload is a sequence of sub-messages, each an FLV-style
// 11-byte header (type 1, length 3, timestamp 3 + 1 high byte, stream id 3) + body + 4-byte back
// pointer. Sub-messages get the aggregate's stream id and csid, and timestamps rebased so the
// first sub-message carries the aggregate's timestamp (32-bit wrap). Each sub-message payload is
// copied into its own SharedBuffer. Truncated input throws ProtocolError. Nested aggregates
// are returned as-is (not split recursively).
std::vector<RtmpMessage> split_aggregate(const RtmpMessage& aggregate);

}  // namespace rill::protocol
