// media::SegmentBuffer: an HLS segment built in its shared buffer (segment_buffer.h).
#include "rill/media/segment_buffer.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace rill::media {

void SegmentBuffer::start(size_t expected) { buf_ = SharedBuffer::create(std::max(expected, kMinCapacity)); }

uint8_t* SegmentBuffer::append(size_t n) {
  if (!buf_) start(n);
  if (buf_->room() < n) {
    const size_t size = buf_->size();
    BufferRef bigger = SharedBuffer::create(std::max(size + n, buf_->capacity() + buf_->capacity() / 2));
    bigger->append(buf_->data(), size);
    buf_ = std::move(bigger);
  }
  uint8_t* at = buf_->tail();
  buf_->commit(n);
  return at;
}

BufferRef SegmentBuffer::finish() {
  BufferRef done = std::move(buf_);
  if (done && done->capacity() - done->size() > done->capacity() / 4)
    return SharedBuffer::copy_of(done->span());
  return done;
}

}  // namespace rill::media
