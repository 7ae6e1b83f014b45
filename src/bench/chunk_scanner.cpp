#include "chunk_scanner.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace rill::bench {

using protocol::ProtocolError;

namespace {
constexpr uint8_t kMessageHeaderSize[4] = {11, 7, 3, 0};

uint32_t be24(const uint8_t* p) { return (uint32_t(p[0]) << 16) | (uint32_t(p[1]) << 8) | p[2]; }
uint32_t be32(const uint8_t* p) { return (uint32_t(p[0]) << 24) | be24(p + 1); }
uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
uint8_t basic_size(uint8_t b0) {
  switch (b0 & 0x3F) {
    case 0: return 2;
    case 1: return 3;
    default: return 1;
  }
}
uint32_t basic_csid(const uint8_t* h) {
  switch (h[0] & 0x3F) {
    case 0: return 64u + h[1];
    case 1: return 64u + h[1] + 256u * h[2];
    default: return h[0] & 0x3F;
  }
}
}  // namespace

ChunkScanner::Stream* ChunkScanner::find(uint32_t csid) {
  for (auto& s : streams_) {
    if (s.csid == csid) return &s;
  }
  return nullptr;
}

ChunkScanner::Stream& ChunkScanner::find_or_create(uint32_t csid, uint8_t fmt) {
  if (Stream* s = find(csid)) return *s;
  if (fmt != 0) {
    throw ProtocolError("chunk stream " + std::to_string(csid) + ": first chunk has fmt " +
                        std::to_string(fmt) + ", expected 0");
  }
  if (streams_.size() >= kMaxChunkStreams) throw ProtocolError("too many chunk streams");
  streams_.emplace_back();
  streams_.back().csid = csid;
  return streams_.back();
}

void ChunkScanner::feed(std::span<const uint8_t> in, Sink& sink) {
  bytes_ += in.size();
  const uint8_t* p = in.data();
  const uint8_t* end = p + in.size();
  while (p < end) {
    if (in_payload_) {
      Stream& s = streams_[cur_];
      size_t n = std::min<size_t>(chunk_left_, size_t(end - p));
      // First bytes into head, kept messages into body.
      if (s.head_len < kHeadBytes) {
        size_t k = std::min<size_t>(kHeadBytes - s.head_len, n);
        std::memcpy(s.head + s.head_len, p, k);
        s.head_len = static_cast<uint8_t>(s.head_len + k);
      }
      if (keeps_body(s.type_id)) s.body.insert(s.body.end(), p, p + n);
      s.done += static_cast<uint32_t>(n);
      chunk_left_ -= static_cast<uint32_t>(n);
      p += n;
      if (chunk_left_ == 0) {
        in_payload_ = false;
        if (s.done == s.length) deliver(s, sink);
      }
      continue;
    }
    // Header bytes.
    if (hdr_len_ < hdr_need_) {
      size_t k = std::min<size_t>(hdr_need_ - hdr_len_, size_t(end - p));
      std::memcpy(hdr_ + hdr_len_, p, k);
      hdr_len_ = static_cast<uint8_t>(hdr_len_ + k);
      p += k;
      if (hdr_len_ < hdr_need_) break;
    }
    const uint8_t fmt = hdr_[0] >> 6;
    const uint8_t basic = basic_size(hdr_[0]);
    if (hdr_stage_ == 0) {
      hdr_need_ = basic + kMessageHeaderSize[fmt];
      hdr_stage_ = 1;
      if (hdr_len_ < hdr_need_) continue;
    }
    if (hdr_stage_ == 1) {
      bool ext;
      if (fmt < 3) {
        ext = be24(hdr_ + basic) == 0xFFFFFF;
      } else {
        const Stream* s = find(basic_csid(hdr_));
        ext = s && s->extended;
      }
      hdr_stage_ = 2;
      if (ext) {
        hdr_need_ += 4;
        if (hdr_len_ < hdr_need_) continue;
      }
    }
    on_header();
    // A zero-length message completes at its header.
    Stream& s = streams_[cur_];
    if (!in_payload_ && s.in_progress && s.done == s.length) deliver(s, sink);
  }
}

void ChunkScanner::on_header() {
  const uint8_t fmt = hdr_[0] >> 6;
  const uint8_t basic = basic_size(hdr_[0]);
  const uint32_t csid = basic_csid(hdr_);
  const uint8_t* mh = hdr_ + basic;
  const bool has_ext = hdr_len_ > basic + kMessageHeaderSize[fmt];
  const uint8_t* ext = mh + kMessageHeaderSize[fmt];
  hdr_len_ = 0;
  hdr_need_ = 1;
  hdr_stage_ = 0;

  Stream& s = find_or_create(csid, fmt);
  cur_ = static_cast<size_t>(&s - streams_.data());
  if (s.in_progress) {
    if (fmt <= 1 && be24(mh + 3) != s.length) {
      throw ProtocolError("chunk stream " + std::to_string(csid) + ": new message header while a message is incomplete");
    }
    chunk_left_ = std::min(chunk_size_, s.length - s.done);
    in_payload_ = chunk_left_ > 0;
    return;
  }
  if (fmt < 3) {
    uint32_t ts = be24(mh);
    s.extended = ts == 0xFFFFFF;
    if (s.extended) ts = be32(ext);
    s.ts_field = ts;
    s.timestamp = fmt == 0 ? ts : s.timestamp + ts;
    if (fmt <= 1) {
      s.length = be24(mh + 3);
      s.type_id = mh[6];
      s.has_header = true;
    }
    if (fmt == 0) s.stream_id = le32(mh + 7);
  } else {
    if (!s.has_header) throw ProtocolError("chunk stream " + std::to_string(csid) + ": fmt 3 without a previous header");
    if (has_ext) s.ts_field = be32(ext);
    s.timestamp += s.ts_field;
  }
  if (keeps_body(s.type_id) && s.length > kMaxKeptBody) {
    throw ProtocolError("message type " + std::to_string(s.type_id) + " of " + std::to_string(s.length) +
                        " bytes exceeds " + std::to_string(kMaxKeptBody));
  }
  s.in_progress = true;
  s.done = 0;
  s.head_len = 0;
  s.body.clear();
  chunk_left_ = std::min(chunk_size_, s.length);
  in_payload_ = chunk_left_ > 0;
}

void ChunkScanner::deliver(Stream& s, Sink& sink) {
  s.in_progress = false;
  ScannedMessage m;
  m.type_id = s.type_id;
  m.stream_id = s.stream_id;
  m.timestamp = s.timestamp;
  m.csid = s.csid;
  m.length = s.length;
  m.head = {s.head, s.head_len};
  if (keeps_body(s.type_id)) m.body = s.body;
  if (s.type_id == 1) {  // Set Chunk Size (5.4.1) applies to the chunks that follow
    if (s.length < 4) throw ProtocolError("Set Chunk Size: short payload");
    uint32_t v = be32(s.head) & 0x7FFFFFFF;
    if (v == 0 || v > kMaxChunkSize) throw ProtocolError("Set Chunk Size: bad value " + std::to_string(v));
    chunk_size_ = v;
  } else if (s.type_id == 2 && s.length >= 4) {  // Abort (5.4.2)
    if (Stream* a = find(be32(s.head))) a->in_progress = false;
  }
  sink.on_message(m);
  if (s.body.capacity() > 64 * 1024) std::vector<uint8_t>().swap(s.body);
}

}  // namespace rill::bench
