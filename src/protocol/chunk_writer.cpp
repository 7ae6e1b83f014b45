#include "rill/protocol/chunk_writer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "rill/core/byte_order.h"

namespace rill::protocol {
namespace {

void validate(size_t payload_len, uint32_t chunk_size, uint32_t csid) {
  // 5.3.1.1: "Chunk stream IDs 2-63 can be encoded in the 1-byte version"; 64-319 in 2 bytes;
  // 64-65599 in 3 bytes. 0 and 1 are the escape values, never ids.
  if (csid < kMinCsid || csid > kMaxCsid) {
    throw std::invalid_argument("chunk writer: csid " + std::to_string(csid) +
                                " outside 2..65599");
  }
  // 5.4.1: chunk size is 31 bits, at least 1.
  if (chunk_size == 0 || chunk_size > 0x7FFFFFFFu) {
    throw std::invalid_argument("chunk writer: chunk size " + std::to_string(chunk_size) +
                                " outside 1..2147483647");
  }
  // 5.3.1.2.1: message length is a 3-byte field.
  if (payload_len > kMaxMessageLength) {
    throw std::invalid_argument("chunk writer: payload of " + std::to_string(payload_len) +
                                " bytes exceeds the 3-byte message length field");
  }
}

inline uint8_t* put_basic(uint8_t* d, uint8_t fmt, uint32_t csid) {
  const uint8_t f = uint8_t(fmt << 6);
  if (csid < 64) {
    *d++ = uint8_t(f | csid);
  } else if (csid < 320) {
    *d++ = f;  // csid field 0: 2-byte form
    *d++ = uint8_t(csid - 64);
  } else {
    *d++ = uint8_t(f | 1);  // csid field 1: 3-byte form, little-endian (csid - 64)
    *d++ = uint8_t((csid - 64) & 0xFF);
    *d++ = uint8_t((csid - 64) >> 8);
  }
  return d;
}


inline size_t size_unchecked(size_t len, uint32_t chunk_size, uint32_t csid, uint32_t ts) {
  const size_t basic = ChunkWriter::basic_header_size(csid);
  const size_t ext = ts >= 0xFFFFFF ? 4 : 0;
  const size_t chunks = len == 0 ? 1 : (len - 1) / chunk_size + 1;
  return basic + 11 + ext + len + (chunks - 1) * (basic + ext);
}

}  // namespace

size_t ChunkWriter::basic_header_size(uint32_t csid) {
  return csid < 64 ? 1 : csid < 320 ? 2 : 3;
}

size_t ChunkWriter::serialized_size(size_t payload_len, uint32_t chunk_size, uint32_t csid,
                                    uint32_t timestamp) {
  validate(payload_len, chunk_size, csid);
  return size_unchecked(payload_len, chunk_size, csid, timestamp);
}

BufferRef ChunkWriter::serialize(const RtmpMessage& m, uint32_t chunk_size) {
  BufferRef out = SharedBuffer::create(
      serialized_size(m.payload.size(), chunk_size, m.csid, m.timestamp));
  serialize_into(*out, m, m.payload.span(), chunk_size);
  return out;
}

size_t ChunkWriter::serialize_into(SharedBuffer& out, const RtmpMessage& m, uint32_t chunk_size) {
  return serialize_into(out, m, m.payload.span(), chunk_size);
}

size_t ChunkWriter::serialize_into(SharedBuffer& out, const RtmpMessage& m,
                                   std::span<const uint8_t> payload, uint32_t chunk_size) {
  const size_t len = payload.size();
  validate(len, chunk_size, m.csid);
  const size_t total = size_unchecked(len, chunk_size, m.csid, m.timestamp);
  if (out.room() < total) {
    throw std::length_error("chunk writer: message needs " + std::to_string(total) +
                            " bytes, buffer has " + std::to_string(out.room()));
  }
  const bool ext = m.timestamp >= 0xFFFFFF;
  uint8_t* const start = out.tail();
  uint8_t* d = start;

  // 5.3.1.2.1 Type 0: timestamp (3), message length (3), type id (1), stream id (4, LE).
  d = put_basic(d, 0, m.csid);
  d = store_be24(d, ext ? 0xFFFFFF : m.timestamp);
  d = store_be24(d, static_cast<uint32_t>(len));
  *d++ = m.type_id;
  d = store_le32(d, m.stream_id);  // 5.3.1.2.1: the message stream id is little-endian
  // 5.3.1.3: "This field MUST be sent when the normal timestamp is set to 0xffffff".
  if (ext) d = store_be32(d, m.timestamp);

  const uint8_t* src = payload.data();
  size_t n = std::min<size_t>(len, chunk_size);
  if (n) std::memcpy(d, src, n);
  d += n;
  size_t off = n;
  if (off < len) {
    // Type 3 continuation header (plus the repeated extended timestamp), built once.
    uint8_t cont[7];
    uint8_t* c = put_basic(cont, 3, m.csid);
    if (ext) c = store_be32(c, m.timestamp);
    const size_t cont_len = static_cast<size_t>(c - cont);
    while (off < len) {
      if (cont_len == 1) {
        *d++ = cont[0];
      } else {
        std::memcpy(d, cont, cont_len);
        d += cont_len;
      }
      n = std::min<size_t>(len - off, chunk_size);
      std::memcpy(d, src + off, n);
      d += n;
      off += n;
    }
  }
  out.commit(static_cast<size_t>(d - start));
  return static_cast<size_t>(d - start);
}

}  // namespace rill::protocol
