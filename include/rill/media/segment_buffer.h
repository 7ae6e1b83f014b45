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
//
// The fill level is kept here and written into the buffer once, when the segment is finished:
// the buffer's header sits in front of up to megabytes of packets, so with many streams on a
// worker it has left the cache by the stream's next frame, and reading it for every size() and
// append() cost a cache miss a frame.
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
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // The segment's bytes, handed over; the builder is empty afterwards.
  BufferRef finish();
  void clear();

 private:
  void grow(size_t n);  // a buffer with room for n more bytes, the bytes so far copied into it

  BufferRef buf_;
  uint8_t* data_ = nullptr;  // buf_'s bytes
  size_t size_ = 0;          // bytes written so far (buf_'s own size is set by finish)
  size_t capacity_ = 0;      // buf_'s capacity, 0 without a buffer
};

}  // namespace rill::media
