#pragma once
// RTMP chunk writer (RTMP spec 1.0, section 5.3): serializes one message into chunks.
//
// The first chunk always has a Type 0 header, so the bytes do not depend on what was sent before
// on that chunk stream and one serialization can be shared by every subscriber that uses the
// same outgoing chunk size. Continuation chunks are Type 3; when the timestamp needs the
// extended field (>= 0xFFFFFF) it is repeated on every continuation chunk, as Flash, librtmp,
// ffmpeg and nginx-rtmp expect.
//
// Stateless: all functions are static. Invalid arguments (csid outside 2..65599, chunk size 0
// or above 0x7FFFFFFF, payload above 0xFFFFFF bytes, not enough room) throw std::invalid_argument
// / std::length_error: they are caller bugs, not peer input.
#include <cstddef>
#include <cstdint>
#include <span>

#include "rill/core/buffer.h"
#include "rill/protocol/rtmp_message.h"

namespace rill::protocol {

class ChunkWriter {
 public:
  // Exact number of bytes serialize() produces for these parameters.
  static size_t serialized_size(size_t payload_len, uint32_t chunk_size, uint32_t csid,
                                uint32_t timestamp);

  // One new SharedBuffer holding all the chunks of `m` (capacity == size).
  static BufferRef serialize(const RtmpMessage& m, uint32_t chunk_size);

  // Appends the chunks of `m` to `out` (which must have serialized_size(...) bytes of room), so
  // several small messages can be batched into one buffer. Returns the bytes written.
  static size_t serialize_into(SharedBuffer& out, const RtmpMessage& m, uint32_t chunk_size);

  // Same, with the header fields of `m` and an explicit payload (m.payload is ignored).
  static size_t serialize_into(SharedBuffer& out, const RtmpMessage& m,
                               std::span<const uint8_t> payload, uint32_t chunk_size);

  // Size of the basic header for a csid (1, 2 or 3 bytes; spec 5.3.1.1).
  static size_t basic_header_size(uint32_t csid);
};

}  // namespace rill::protocol
