// media::SegmentBuffer: an HLS segment built in its shared buffer (segment_buffer.h).
#include "rill/media/segment_buffer.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace rill::media {

void SegmentBuffer::start(size_t expected) {
  buf_ = SharedBuffer::create(std::max(expected, kMinCapacity));
  data_ = buf_->data();
  size_ = 0;
  capacity_ = buf_->capacity();
}

void SegmentBuffer::grow(size_t n) {
  BufferRef bigger = SharedBuffer::create(std::max(size_ + n, capacity_ + capacity_ / 2));
  bigger->append(data_, size_);
  buf_ = std::move(bigger);
  data_ = buf_->data();
  capacity_ = buf_->capacity();
}

uint8_t* SegmentBuffer::append(size_t n) {
  if (!buf_) start(n);
  if (capacity_ - size_ < n) grow(n);
  uint8_t* at = data_ + size_;
  size_ += n;
  return at;
}

BufferRef SegmentBuffer::finish() {
  if (!buf_) return {};
  buf_->resize(size_);
  BufferRef done = std::move(buf_);
  clear();
  if (done->capacity() - done->size() > done->capacity() / 4) return SharedBuffer::copy_of(done->span());
  return done;
}

void SegmentBuffer::clear() {
  buf_.reset();
  data_ = nullptr;
  size_ = capacity_ = 0;
}

}  // namespace rill::media
