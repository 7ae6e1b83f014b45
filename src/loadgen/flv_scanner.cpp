#include "flv_scanner.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "rill/core/byte_order.h"
#include "rill/protocol/error.h"

namespace rill::loadgen {

using protocol::ProtocolError;

void FlvScanner::feed(std::span<const uint8_t> in, Sink& sink) {
  const uint8_t* p = in.data();
  const uint8_t* end = p + in.size();
  while (p < end) {
    switch (state_) {
      case State::Header: {
        size_t k = std::min<size_t>(9 - have_, size_t(end - p));
        std::memcpy(buf_ + have_, p, k);
        have_ = static_cast<uint8_t>(have_ + k);
        p += k;
        if (have_ < 9) break;
        if (buf_[0] != 'F' || buf_[1] != 'L' || buf_[2] != 'V') throw ProtocolError("FLV: bad signature");
        uint32_t offset = load_be32(buf_ + 5);
        if (offset < 9 || offset > 1024) throw ProtocolError("FLV: bad data offset " + std::to_string(offset));
        skip_ = offset - 9 + 4;  // padding + PreviousTagSize0
        have_ = 0;
        state_ = State::Skip;
        break;
      }
      case State::Skip: {
        size_t k = std::min<size_t>(skip_, size_t(end - p));
        p += k;
        skip_ -= static_cast<uint32_t>(k);
        if (skip_ == 0) state_ = State::TagHeader;
        break;
      }
      case State::TagHeader: {
        size_t k = std::min<size_t>(11 - have_, size_t(end - p));
        std::memcpy(buf_ + have_, p, k);
        have_ = static_cast<uint8_t>(have_ + k);
        p += k;
        if (have_ < 11) break;
        have_ = 0;
        uint8_t type = buf_[0] & 0x1F;
        if (type != 8 && type != 9 && type != 18) throw ProtocolError("FLV: bad tag type " + std::to_string(type));
        tag_.type = type;
        tag_.size = load_be24(buf_ + 1);
        // TimestampExtended (byte 7) is the high byte of the timestamp.
        tag_.timestamp = (uint32_t{buf_[7]} << 24) | load_be24(buf_ + 4);
        if (tag_.size > kMaxTagSize) throw ProtocolError("FLV: tag size over limit");
        left_ = tag_.size;
        head_len_ = 0;
        state_ = State::Body;
        if (left_ == 0) goto tag_done;
        break;
      }
      case State::Body: {
        size_t k = std::min<size_t>(left_, size_t(end - p));
        if (head_len_ < kHeadBytes) {
          size_t h = std::min<size_t>(kHeadBytes - head_len_, k);
          std::memcpy(head_ + head_len_, p, h);
          head_len_ = static_cast<uint8_t>(head_len_ + h);
        }
        p += k;
        left_ -= static_cast<uint32_t>(k);
        if (left_ == 0) goto tag_done;
        break;
      }
    }
    continue;
  tag_done:
    tag_.head = {head_, head_len_};
    sink.on_tag(tag_);
    skip_ = 4;  // PreviousTagSize
    state_ = State::Skip;
  }
}

}  // namespace rill::loadgen
