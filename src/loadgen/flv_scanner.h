#pragma once
// rill-bench: an FLV stream scanner (FLV spec 10.1 Annex E.2-E.4.1) for HTTP-FLV players. Like
// the RTMP players' chunk reader (header-only mode) it keeps only the tag header and the first
// bytes of each tag body, so an endless stream costs a few dozen bytes of state per player.
#include <cstddef>
#include <cstdint>
#include <span>

namespace rill::loadgen {

struct ScannedTag {
  uint8_t type = 0;          // 8 audio, 9 video, 18 script
  uint32_t timestamp = 0;    // Timestamp | TimestampExtended << 24
  uint32_t size = 0;         // DataSize
  std::span<const uint8_t> head;  // first min(size, kHeadBytes) body bytes
};

class FlvScanner {
 public:
  static constexpr size_t kHeadBytes = 16;
  static constexpr uint32_t kMaxTagSize = 16u << 20;

  class Sink {
   public:
    virtual void on_tag(const ScannedTag& tag) = 0;

   protected:
    ~Sink() = default;
  };

  // Consumes all bytes; throws protocol::ProtocolError on a bad signature, tag type or size.
  void feed(std::span<const uint8_t> in, Sink& sink);
  bool header_done() const { return state_ != State::Header; }

 private:
  enum class State { Header, Skip, TagHeader, Body };
  State state_ = State::Header;
  uint8_t buf_[16] = {};
  uint8_t have_ = 0;
  uint32_t skip_ = 0;  // bytes to skip (header padding / PreviousTagSize)
  uint32_t left_ = 0;  // body bytes left
  ScannedTag tag_;
  uint8_t head_[kHeadBytes] = {};
  uint8_t head_len_ = 0;
};

}  // namespace rill::loadgen
