#include "rill/protocol/flv_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "rill/core/byte_order.h"

namespace rill::protocol {

namespace {

void check_body_size(size_t n) {
  if (n > kFlvMaxBodySize) {
    throw ProtocolError("flv tag: body of " + std::to_string(n) + " bytes exceeds the UI24 DataSize maximum " +
                        std::to_string(kFlvMaxBodySize));
  }
}

}  // namespace

std::array<uint8_t, kFlvFileHeaderSize> flv_file_header(bool has_audio, bool has_video) {
  // FLV E.2: Signature "FLV", Version 1, TypeFlagsReserved UB[5] 0, TypeFlagsAudio UB[1],
  // TypeFlagsReserved UB[1] 0, TypeFlagsVideo UB[1], DataOffset UI32 = 9; then E.3
  // PreviousTagSize0 UI32 "Always 0".
  std::array<uint8_t, kFlvFileHeaderSize> h{'F', 'L', 'V', 0x01, 0, 0, 0, 0, 9, 0, 0, 0, 0};
  h[4] = static_cast<uint8_t>((has_audio ? 0x04 : 0) | (has_video ? 0x01 : 0));
  return h;
}

size_t serialize_flv_tag_into(uint8_t* out, uint8_t tag_type, uint32_t timestamp_ms, std::span<const uint8_t> body) {
  check_body_size(body.size());
  const auto data_size = static_cast<uint32_t>(body.size());
  // FLV E.4.1 FLVTAG: Reserved UB[2], Filter UB[1], TagType UB[5], DataSize UI24, Timestamp UI24,
  // TimestampExtended UI8 ("upper 8 bits of a 32-bit timestamp"), StreamID UI24 "Always 0".
  out[0] = tag_type & 0x1F;
  store_be24(out + 1, data_size);
  store_be24(out + 4, timestamp_ms & 0xFFFFFF);
  out[7] = static_cast<uint8_t>(timestamp_ms >> 24);
  store_be24(out + 8, 0);
  if (!body.empty()) std::memcpy(out + kFlvTagHeaderSize, body.data(), body.size());
  // E.3: PreviousTagSize = size of the previous tag including its 11-byte header.
  store_be32(out + kFlvTagHeaderSize + body.size(), static_cast<uint32_t>(kFlvTagHeaderSize) + data_size);
  return flv_tag_size(body.size());
}

BufferRef serialize_flv_tag(uint8_t tag_type, uint32_t timestamp_ms, std::span<const uint8_t> body) {
  return serialize_flv_tag_framed(tag_type, timestamp_ms, body, {}, {});
}

BufferRef serialize_flv_tag_framed(uint8_t tag_type, uint32_t timestamp_ms, std::span<const uint8_t> body,
                                   std::string_view prefix, std::string_view suffix) {
  check_body_size(body.size());
  const size_t tag = flv_tag_size(body.size());
  BufferRef buf = SharedBuffer::create(prefix.size() + tag + suffix.size());
  buf->append(prefix.data(), prefix.size());
  buf->commit(serialize_flv_tag_into(buf->tail(), tag_type, timestamp_ms, body));
  buf->append(suffix.data(), suffix.size());
  return buf;
}

// ---------------------------------------------------------------------------------------------
// FlvFileReader

FlvFileReader::FlvFileReader(FlvReaderOptions options) : opt_(options) {}

void FlvFileReader::fail(const std::string& what) const {
  throw ProtocolError("flv stream at offset " + std::to_string(consumed_) + ": " + what);
}

void FlvFileReader::feed(std::span<const uint8_t> bytes) {
  if (pos_ > 0 && pos_ * 2 >= buf_.size()) {  // compact: amortized O(1) per byte
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(pos_));
    pos_ = 0;
  }
  buf_.insert(buf_.end(), bytes.begin(), bytes.end());
}

void FlvFileReader::consume(size_t n) {
  pos_ += n;
  consumed_ += n;
}

std::optional<FlvTag> FlvFileReader::next() {
  for (;;) {
    const uint8_t* p = buf_.data() + pos_;
    const size_t avail = buf_.size() - pos_;
    switch (state_) {
      case State::Header: {
        if (avail < kFlvHeaderSize) {
          // Reject a wrong signature as soon as its bytes are here, not only after 9 bytes.
          for (size_t i = 0; i < avail && i < 3; ++i) {
            if (p[i] != "FLV"[i]) fail("expected signature \"FLV\", found a byte " + std::to_string(p[i]));
          }
          return std::nullopt;
        }
        if (p[0] != 'F' || p[1] != 'L' || p[2] != 'V') {
          char found[16];
          std::snprintf(found, sizeof found, "%02x %02x %02x", p[0], p[1], p[2]);
          fail(std::string("expected signature \"FLV\", found bytes ") + found);
        }
        if (p[3] != 1) fail("expected FLV version 1, found " + std::to_string(p[3]));
        has_audio_ = (p[4] & 0x04) != 0;
        has_video_ = (p[4] & 0x01) != 0;
        // E.2 DataOffset: "the length of this header in bytes" (9 for version 1); a larger value
        // leaves room for a future header extension, skipped here up to a limit.
        uint32_t data_offset = load_be32(p + 5);
        if (data_offset < kFlvHeaderSize || data_offset > opt_.max_data_offset) {
          fail("expected header DataOffset between 9 and " + std::to_string(opt_.max_data_offset) + ", found " +
               std::to_string(data_offset));
        }
        consume(kFlvHeaderSize);
        pad_left_ = data_offset - kFlvHeaderSize;
        state_ = State::HeaderPad;
        break;
      }
      case State::HeaderPad: {
        size_t n = std::min(pad_left_, avail);
        consume(n);
        pad_left_ -= n;
        if (pad_left_ > 0) return std::nullopt;
        state_ = State::PreviousTagSize;
        break;
      }
      case State::PreviousTagSize: {
        if (avail < kFlvPreviousTagSizeSize) return std::nullopt;
        uint32_t prev = load_be32(p);
        if (opt_.check_previous_tag_size && prev != expected_prev_size_) {
          fail("expected PreviousTagSize " + std::to_string(expected_prev_size_) + ", found " +
               std::to_string(prev));
        }
        consume(kFlvPreviousTagSizeSize);
        state_ = State::Tag;
        break;
      }
      case State::Tag: {
        if (avail < kFlvTagHeaderSize) return std::nullopt;
        // E.4.1: Reserved UB[2] "shall be 0", Filter UB[1], TagType UB[5] in {8, 9, 18}.
        if (p[0] & 0xC0) fail("expected reserved tag bits 0, found tag byte " + std::to_string(p[0]));
        uint8_t type = p[0] & 0x1F;
        if (type != 8 && type != 9 && type != 18) {
          fail("expected tag type 8, 9 or 18, found " + std::to_string(type));
        }
        uint32_t data_size = load_be24(p + 1);
        if (data_size > opt_.max_tag_size) {
          fail("tag DataSize " + std::to_string(data_size) + " exceeds limit " + std::to_string(opt_.max_tag_size));
        }
        if (avail < kFlvTagHeaderSize + data_size) return std::nullopt;
        FlvTag tag;
        tag.type = type;
        tag.filtered = (p[0] & 0x20) != 0;
        tag.timestamp_ms = load_be24(p + 4) | (uint32_t{p[7]} << 24);
        tag.body.assign(p + kFlvTagHeaderSize, p + kFlvTagHeaderSize + data_size);
        consume(kFlvTagHeaderSize + data_size);
        expected_prev_size_ = static_cast<uint32_t>(kFlvTagHeaderSize) + data_size;
        state_ = State::PreviousTagSize;
        return tag;
      }
    }
  }
}

}  // namespace rill::protocol
