#include "rill/protocol/chunk_reader.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "rill/core/byte_order.h"
#include "rill/protocol/error.h"

namespace rill::protocol {
namespace {

// 5.3.1.2: message header length by fmt (Type 0: 11, Type 1: 7, Type 2: 3, Type 3: 0).
constexpr uint8_t kMessageHeaderSize[4] = {11, 7, 3, 0};

// 5.3.1.1: chunk basic header. The low 6 bits of the first byte are the csid (2..63); 0 means
// a 2-byte form (csid = 64 + second byte), 1 a 3-byte form (csid = 64 + b1 + b2 * 256).
inline uint8_t basic_header_size(uint8_t b0) {
  uint8_t cs = b0 & 0x3F;
  return cs == 0 ? 2 : cs == 1 ? 3 : 1;
}
inline uint32_t basic_header_csid(const uint8_t* h) {
  uint8_t cs = h[0] & 0x3F;
  if (cs == 0) return 64u + h[1];
  if (cs == 1) return 64u + h[1] + (uint32_t(h[2]) << 8);
  return cs;
}

std::string cs_name(uint32_t csid) { return "chunk stream " + std::to_string(csid); }

// The errors of the per-chunk paths, out of line so that those paths stay small.
[[noreturn, gnu::cold, gnu::noinline]] void throw_length_mismatch(uint32_t csid, uint8_t fmt, uint32_t len,
                                                                  uint32_t length, uint32_t received) {
  throw ProtocolError(cs_name(csid) + ": fmt " + std::to_string(fmt) + " header announces length " +
                      std::to_string(len) + " while a message of length " + std::to_string(length) +
                      " is incomplete (" + std::to_string(received) + " bytes received)");
}

[[noreturn, gnu::cold, gnu::noinline]] void throw_over_limit(uint32_t csid, uint32_t length, uint32_t limit) {
  throw ProtocolError(cs_name(csid) + ": chunk header: message length " + std::to_string(length) +
                      " exceeds limit " + std::to_string(limit));
}

[[noreturn, gnu::cold, gnu::noinline]] void throw_too_many_partial(uint32_t csid, size_t limit) {
  throw ProtocolError(cs_name(csid) + ": expected at most " + std::to_string(limit) +
                      " partially received messages, got one more");
}

[[noreturn, gnu::cold, gnu::noinline]] void throw_partial_bytes(uint32_t csid, uint32_t length, size_t total,
                                                                size_t limit) {
  throw ProtocolError(cs_name(csid) + ": message length " + std::to_string(length) +
                      " would put partially received messages at " + std::to_string(total) +
                      " bytes, limit " + std::to_string(limit));
}

}  // namespace

ChunkReader::ChunkReader(Handler on_message, ChunkReaderLimits limits)
    : handler_(std::move(on_message)), limits_(limits) {
  streams_.reserve(8);
}

ChunkReader::ChunkReader(HeaderHandler on_message, uint32_t keep_prefix, ChunkReaderLimits limits)
    : header_handler_(std::move(on_message)), keep_prefix_(keep_prefix), limits_(limits) {
  streams_.reserve(8);
}

size_t ChunkReader::feed(std::span<const uint8_t> bytes) {
  bytes_received_ += bytes.size();
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  while (n) {
    size_t k = step(p, n);
    p += k;
    n -= k;
    if (replay_len_) drain_replay();
  }
  return bytes.size();
}

void ChunkReader::drain_replay() {
  // The replayed bytes (at most 3) start a fresh chunk header, which needs at least 5 bytes to
  // produce another replay, so replays never nest.
  uint8_t tmp[sizeof(replay_)];
  size_t m = replay_len_;
  std::memcpy(tmp, replay_, m);
  replay_len_ = 0;
  size_t i = 0;
  while (i < m) {
    i += step(tmp + i, m - i);
    if (replay_len_) throw ProtocolError("chunk reader: nested extended-timestamp replay");
  }
}

inline void ChunkReader::append(Stream& s, const uint8_t* p, size_t n) {
  // Normal mode: the buffer has room for the whole message, so all n bytes are kept. Header-only
  // mode: bytes past the kept prefix are counted and dropped.
  const size_t keep = std::min(n, s.payload->room());
  std::memcpy(s.payload->tail(), p, keep);
  s.payload->commit(keep);
  s.received += static_cast<uint32_t>(n);
}

uint32_t ChunkReader::kept_size(const Stream& s) const {
  if (header_handler_ && truncatable(s.type_id)) return std::min(s.length, keep_prefix_);
  return s.length;
}

size_t ChunkReader::step(const uint8_t* p, size_t n) {
  return in_payload_ ? step_payload(p, n) : step_header(p, n);
}

size_t ChunkReader::step_payload(const uint8_t* p, size_t n) {
  Stream& s = streams_[cur_];
  size_t take = std::min<size_t>(chunk_left_, n);
  append(s, p, take);
  chunk_left_ -= static_cast<uint32_t>(take);
  if (chunk_left_ == 0) end_chunk();
  return take;
}

size_t ChunkReader::step_header(const uint8_t* p, size_t n) {
  if (hdr_len_ == 0 && n >= sizeof hdr_) {
    // The whole header is in view (the usual case): read it in place, not through hdr_.
    const uint8_t fmt = p[0] >> 6;
    const uint8_t basic = basic_header_size(p[0]);
    const size_t size = basic + kMessageHeaderSize[fmt] + (extended_timestamp_follows(p, fmt, basic) ? 4 : 0);
    on_header(p, size);
    return size;
  }
  size_t used = 0;
  for (;;) {
    size_t take = std::min<size_t>(hdr_need_ - hdr_len_, n - used);
    std::memcpy(hdr_ + hdr_len_, p + used, take);
    hdr_len_ += static_cast<uint8_t>(take);
    used += take;
    if (hdr_len_ < hdr_need_) return used;
    if (header_complete()) {
      const size_t size = hdr_len_;
      hdr_len_ = 0;
      hdr_need_ = 1;
      hdr_stage_ = 0;
      on_header(hdr_, size);
      return used;
    }
  }
}

// 5.3.1.3 Extended Timestamp: present when the timestamp field is 0xFFFFFF. On fmt 3 chunks
// Flash, librtmp, ffmpeg and nginx-rtmp repeat it when the stream's last fmt 0/1/2 header
// carried one; the spec is silent, so that is what we expect (see on_header for senders
// that don't repeat it on continuation chunks). `h`: the basic and message headers.
bool ChunkReader::extended_timestamp_follows(const uint8_t* h, uint8_t fmt, uint8_t basic) {
  if (fmt < 3) return load_be24(h + basic) == 0xFFFFFF;
  const Stream* s = find(basic_header_csid(h));
  return s && s->extended;
}

bool ChunkReader::header_complete() {
  const uint8_t fmt = hdr_[0] >> 6;
  const uint8_t basic = basic_header_size(hdr_[0]);
  switch (hdr_stage_) {
    case 0:
      hdr_need_ = basic + kMessageHeaderSize[fmt];
      hdr_stage_ = 1;
      if (hdr_len_ < hdr_need_) return false;
      [[fallthrough]];
    case 1: {
      hdr_stage_ = 2;
      if (!extended_timestamp_follows(hdr_, fmt, basic)) return true;
      hdr_need_ += 4;
      return hdr_len_ >= hdr_need_;
    }
    default:
      return true;
  }
}

void ChunkReader::on_header(const uint8_t* h, size_t size) {
  const uint8_t fmt = h[0] >> 6;
  const uint8_t basic = basic_header_size(h[0]);
  const uint32_t csid = basic_header_csid(h);
  const uint8_t* mh = h + basic;
  const bool has_ext = size > basic + kMessageHeaderSize[fmt];
  const uint8_t* ext = mh + kMessageHeaderSize[fmt];

  Stream& s = find_or_create(csid, fmt);
  cur_ = static_cast<size_t>(&s - streams_.data());
  if (s.payload) {
    continue_message(s, fmt, mh, has_ext ? ext : nullptr);
  } else {
    start_message(s, fmt, mh, has_ext ? ext : nullptr);
  }
}

// A chunk of a message in progress on its chunk stream.
inline void ChunkReader::continue_message(Stream& s, uint8_t fmt, const uint8_t* mh, const uint8_t* ext) {
  if (fmt <= 1) {
    // A full header in the middle of a message: accept it as a continuation when it agrees
    // on the length (as ffmpeg does), refuse otherwise.
    uint32_t len = load_be24(mh + 3);
    if (len != s.length) throw_length_mismatch(s.csid, fmt, len, s.length, s.received);
  } else if (fmt == 3 && ext && load_be32(ext) != s.ts_field) {
    // A continuation chunk whose 4 bytes after the basic header do not repeat the extended
    // timestamp: the sender follows the letter of the spec, those bytes are payload.
    chunk_left_ = std::min(chunk_size_, s.length - s.received);
    uint32_t k = std::min<uint32_t>(4, chunk_left_);
    append(s, ext, k);
    chunk_left_ -= k;
    replay_len_ = static_cast<uint8_t>(4 - k);
    std::memcpy(replay_, ext + k, replay_len_);
    if (chunk_left_ == 0) {
      end_chunk();
    } else {
      in_payload_ = true;
    }
    return;
  }
  // Continuation chunk: 5.3.1.2.4, "all chunks of a message except the first one should use
  // this type".
  chunk_left_ = std::min(chunk_size_, s.length - s.received);
  in_payload_ = true;
}

// The first chunk of a new message: its header fields (fmt 1/2/3 reuse the previous ones).
inline void ChunkReader::start_message(Stream& s, uint8_t fmt, const uint8_t* mh, const uint8_t* ext) {
  if (fmt < 3) {
    uint32_t ts = load_be24(mh);
    s.extended = ts == 0xFFFFFF;
    if (s.extended) ts = load_be32(ext);
    s.ts_field = ts;
    if (fmt == 0) {
      s.timestamp = ts;  // 5.3.1.2.1: absolute timestamp
    } else {
      s.timestamp += ts;  // 5.3.1.2.2/3: delta; wraps mod 2^32
    }
    if (fmt <= 1) {
      s.length = load_be24(mh + 3);
      s.type_id = mh[6];
    }
    if (fmt == 0) s.stream_id = load_le32(mh + 7);  // message stream id is little-endian
  } else {
    // 5.3.1.2.4: a Type 3 chunk starting a message takes everything from the previous header,
    // including the delta ("If the delta between the first message and the second message is
    // same as the time stamp of the first message, then a chunk of Type 3 could immediately
    // follow the chunk of Type 0").
    if (ext) s.ts_field = load_be32(ext);
    s.timestamp += s.ts_field;
  }
  start_payload(s);
}

// Checks the limits and allocates the payload buffer of a new message.
inline void ChunkReader::start_payload(Stream& s) {
  if (s.length > limits_.max_message_size) throw_over_limit(s.csid, s.length, limits_.max_message_size);
  s.received = 0;
  if (s.length == 0) {
    s.payload = SharedBuffer::create(0);
    deliver(s);
    return;
  }
  if (partial_messages_ >= limits_.max_partial_messages) {
    throw_too_many_partial(s.csid, limits_.max_partial_messages);
  }
  const uint32_t kept = kept_size(s);
  if (kept > limits_.max_partial_bytes - partial_bytes_) {
    throw_partial_bytes(s.csid, s.length, partial_bytes_ + kept, limits_.max_partial_bytes);
  }
  // Allocated once with the kept size (the message length in normal mode) as capacity; filled
  // in place.
  s.payload = SharedBuffer::create(kept, pool_);
  ++partial_messages_;
  partial_bytes_ += kept;
  chunk_left_ = std::min(chunk_size_, s.length);
  in_payload_ = true;
}

void ChunkReader::end_chunk() {
  in_payload_ = false;
  Stream& s = streams_[cur_];
  if (s.received == s.length) deliver(s);
}

void ChunkReader::deliver(Stream& s) {
  RtmpMessage m;
  m.type_id = s.type_id;
  m.stream_id = s.stream_id;
  m.timestamp = s.timestamp;
  m.csid = s.csid;
  if (s.length) {
    --partial_messages_;
    partial_bytes_ -= s.payload->capacity();
  }
  m.payload = std::move(s.payload);
  if (m.type_id == msg_type::SetChunkSize) {
    // 5.4.1: applies to the chunks that follow.
    uint32_t v = parse_set_chunk_size(m.payload.span());
    if (v > limits_.max_chunk_size) {
      throw ProtocolError("Set Chunk Size: chunk size " + std::to_string(v) + " exceeds limit " +
                          std::to_string(limits_.max_chunk_size));
    }
    chunk_size_ = v;
  } else if (m.type_id == msg_type::Abort) {
    // 5.4.2: "discard the partially received message over a chunk stream".
    if (Stream* a = find(parse_abort(m.payload.span())); a && a->payload) drop_partial(*a);
  }
  if (handler_) {
    handler_(std::move(m));
  } else if (header_handler_) {
    header_handler_(std::move(m), s.length);
  }
}

void ChunkReader::drop_partial(Stream& s) {
  partial_bytes_ -= s.payload->capacity();
  s.payload.reset();
  --partial_messages_;
}

ChunkReader::Stream* ChunkReader::find(uint32_t csid) {
  if (csid < small_ids_.size() && small_ids_[csid]) return &streams_[small_ids_[csid] - 1];
  for (Stream& s : streams_) {
    if (s.csid == csid) return &s;
  }
  return nullptr;
}

ChunkReader::Stream& ChunkReader::find_or_create(uint32_t csid, uint8_t fmt) {
  if (Stream* s = find(csid)) return *s;
  // A fmt 1 header is accepted as the first one (librtmp may start a channel with it; the
  // stream id then defaults to 0, as in nginx-rtmp and ffmpeg); fmt 2/3 have nothing to reuse.
  if (fmt >= 2) {
    throw ProtocolError(cs_name(csid) + ": expected a fmt 0 or 1 header first, got fmt " +
                        std::to_string(fmt));
  }
  if (streams_.size() >= limits_.max_chunk_streams) {
    throw ProtocolError("expected at most " + std::to_string(limits_.max_chunk_streams) +
                        " chunk streams, got a new one: " + cs_name(csid));
  }
  Stream& s = streams_.emplace_back();
  s.csid = csid;
  if (csid < small_ids_.size() && streams_.size() <= 0xFF)
    small_ids_[csid] = static_cast<uint8_t>(streams_.size());
  return s;
}

}  // namespace rill::protocol
