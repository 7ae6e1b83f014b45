#pragma once
// SharedBuffer: an immutable-once-published, reference-counted byte buffer.
//
// Fan-out is zero-copy: a media message is serialized once per output format into one
// SharedBuffer and every subscriber's output queue holds a reference to it (the idea of
// nginx-rtmp's shared chunk chains). A worker is single-threaded, so the count is not atomic:
// a BufferRef must never cross threads or processes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <utility>

namespace rill {

class BufferRef;
class BufferPool;

class SharedBuffer {
 public:
  // Allocates header and bytes in one block, from `pool` when given (core/buffer_pool.h: the
  // buffer then stays on the pool's thread). size() starts at 0; capacity is fixed.
  static BufferRef create(size_t capacity, BufferPool* pool = nullptr);
  static BufferRef copy_of(std::span<const uint8_t> bytes);
  static BufferRef copy_of(std::string_view bytes);

  uint8_t* data() { return bytes(); }
  const uint8_t* data() const { return const_cast<SharedBuffer*>(this)->bytes(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  std::span<const uint8_t> span() const { return {data(), size_}; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data()), size_}; }

  // Filling (only before the buffer is shared).
  void append(const void* p, size_t n);
  void append(std::span<const uint8_t> s) { append(s.data(), s.size()); }
  void push_back(uint8_t b) { append(&b, 1); }
  void resize(size_t n);  // n <= capacity
  // Writable tail for in-place serialization; call commit(n) after writing n bytes.
  uint8_t* tail() { return bytes() + size_; }
  size_t room() const { return capacity_ - size_; }
  void commit(size_t n);

  // For C callbacks (evbuffer_add_reference): take a raw reference, release it later.
  void ref() { ++refs_; }
  void unref();
  uint32_t use_count() const { return refs_; }
  // The pool the buffer came from, or null (the heap).
  BufferPool* pool() const { return pool_; }

 private:
  SharedBuffer(size_t capacity, BufferPool* pool) : capacity_(capacity), pool_(pool) {}
  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(this + 1); }

  uint32_t refs_ = 0;
  size_t size_ = 0;
  size_t capacity_;
  BufferPool* pool_;
};

// Smart pointer to a SharedBuffer. Cheap to copy (non-atomic increment).
class BufferRef {
 public:
  BufferRef() = default;
  explicit BufferRef(SharedBuffer* b) : b_(b) { if (b_) b_->ref(); }
  BufferRef(const BufferRef& o) : b_(o.b_) { if (b_) b_->ref(); }
  BufferRef(BufferRef&& o) noexcept : b_(std::exchange(o.b_, nullptr)) {}
  BufferRef& operator=(BufferRef o) noexcept { std::swap(b_, o.b_); return *this; }
  ~BufferRef() { if (b_) b_->unref(); }

  SharedBuffer* get() const { return b_; }
  SharedBuffer* operator->() const { return b_; }
  SharedBuffer& operator*() const { return *b_; }
  explicit operator bool() const { return b_ != nullptr; }
  void reset() { BufferRef().swap(*this); }
  void swap(BufferRef& o) noexcept { std::swap(b_, o.b_); }

  // Convenience accessors; an empty ref reads as zero bytes.
  const uint8_t* data() const { return b_ ? b_->data() : nullptr; }
  size_t size() const { return b_ ? b_->size() : 0; }
  std::span<const uint8_t> span() const { return b_ ? b_->span() : std::span<const uint8_t>{}; }

 private:
  SharedBuffer* b_ = nullptr;
};

// A window onto a shared buffer: what an output queue holds (a message may be sent partially).
struct BufferSlice {
  BufferRef buf;
  size_t offset = 0;
  size_t length = 0;
  const uint8_t* data() const { return buf.data() + offset; }
};

}  // namespace rill
