#pragma once
// SegmentBuffer: the MPEG-TS segment being built, written in place into the shared buffer it
// will be served from — the HLS store and every response then reference those bytes, with no
// copy of the segment when it closes.
//
// A SharedBuffer has a fixed capacity, so each segment starts with a guess (the previous
// segment's size plus an eighth: a CBR stream's segments are alike) and grows by copying into
// one half as large again when a segment outgrows it (a copy the old builder paid on every
// segment). A finished segment that would keep more than a quarter of its buffer as slack is
// copied to its size, so the store never holds much unused memory.
#include <cstddef>
#include <cstdint>

#include "rill/core/buffer.h"
#include "rill/protocol/ts_muxer.h"

namespace rill::media {

class SegmentBuffer final : public protocol::TsSink {
 public:
  static constexpr size_t kMinCapacity = 64 * 1024;

  // A new, empty segment with room for `expected` bytes (at least kMinCapacity).
  void start(size_t expected);
  uint8_t* append(size_t n) override;
  size_t size() const { return buf_.size(); }
  size_t capacity() const { return buf_ ? buf_->capacity() : 0; }
  // The segment's bytes, handed over; the builder is empty afterwards.
  BufferRef finish();
  void clear() { buf_.reset(); }

 private:
  BufferRef buf_;
};

}  // namespace rill::media
