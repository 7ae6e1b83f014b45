#include "rill/core/buffer.h"

#include <new>
#include <stdexcept>

#include "rill/core/buffer_pool.h"

namespace rill {

BufferRef SharedBuffer::create(size_t capacity, BufferPool* pool) {
  const size_t n = sizeof(SharedBuffer) + capacity;
  void* mem = pool ? pool->allocate(n) : ::operator new(n);
  return BufferRef(new (mem) SharedBuffer(capacity, pool));
}

BufferRef SharedBuffer::copy_of(std::span<const uint8_t> bytes) {
  BufferRef b = create(bytes.size());
  b->append(bytes.data(), bytes.size());
  return b;
}

BufferRef SharedBuffer::copy_of(std::string_view bytes) {
  return copy_of(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

void SharedBuffer::append(const void* p, size_t n) {
  if (n > capacity_ - size_) throw std::length_error("SharedBuffer::append past capacity");
  if (n) std::memcpy(bytes() + size_, p, n);
  size_ += n;
}

void SharedBuffer::resize(size_t n) {
  if (n > capacity_) throw std::length_error("SharedBuffer::resize past capacity");
  size_ = n;
}

void SharedBuffer::commit(size_t n) {
  if (n > capacity_ - size_) throw std::length_error("SharedBuffer::commit past capacity");
  size_ += n;
}

void SharedBuffer::unref() {
  if (--refs_ == 0) {
    BufferPool* pool = pool_;
    const size_t n = sizeof(SharedBuffer) + capacity_;
    this->~SharedBuffer();
    if (pool)
      pool->release(this, n);
    else
      ::operator delete(this);
  }
}

}  // namespace rill
