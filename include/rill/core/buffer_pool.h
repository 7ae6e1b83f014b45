#pragma once
// BufferPool: free lists of memory blocks for one worker's per-frame allocations (a published
// message's payload, its MediaFrame), so that a frame costs a list pop and a list push instead
// of a trip through malloc and free each. Frames are made and dropped at the input's rate
// (about 70 a second per 750 kbps publisher, dropped a GOP at a time); jemalloc spends some 265
// instructions on a payload's allocation and more on blocks past its thread cache (32 KiB: a
// video keyframe), the pool some 20.
//
// Blocks come in size classes, four per power of two (a block wastes at most a quarter of its
// size); a block past max_block is not pooled (plain operator new and delete). The free lists
// hold at most max_free_bytes in all: a block freed beyond that goes back to the heap.
//
// Single-threaded, like BufferRef: a block is allocated and released on the thread that created
// the pool (a buffer handed to another thread is copied first, record::FileWriter::append, or
// only read there while its reference stays on the pool's thread, record::AppendBytes; the
// jobs of a net::BlockingWorkThread carry no frame). Under AddressSanitizer a block allocated or
// released on another thread aborts with a report, so that the sanitizer runs of the tests catch
// a path that breaks this. The pool lives as long as its owner's handle and its last block: a
// buffer released after the owner has gone (a worker's teardown order) still finds it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <thread>

namespace rill {

struct BufferPoolLimits {
  size_t max_block = 1u << 20;        // larger blocks are not pooled
  size_t max_free_bytes = 16u << 20;  // what the free lists hold at most
};

class BufferPool {
 public:
  using Limits = BufferPoolLimits;
  struct Stats {
    uint64_t reused = 0;     // allocations served from a free list
    uint64_t allocated = 0;  // allocations that went to the heap (pooled sizes)
    uint64_t unpooled = 0;   // allocations past max_block
    size_t free_bytes = 0;   // bytes on the free lists now
    size_t blocks_out = 0;   // blocks allocated and not yet released
  };
  // The owner's handle: when it goes, the free lists are emptied, and the pool itself goes with
  // the last block still out.
  struct Closer {
    void operator()(BufferPool* p) const { p->close(); }
  };
  using Owner = std::unique_ptr<BufferPool, Closer>;
  static Owner create(Limits limits = {});

  // At least n bytes, aligned for any type. Released with release(p, n) and the same n.
  void* allocate(size_t n);
  void release(void* p, size_t n);

  // The size of the block that holds n bytes (n itself when n is past max_block).
  size_t block_size(size_t n) const;
  const Stats& stats() const { return stats_; }
  const Limits& limits() const { return limits_; }

 private:
  explicit BufferPool(Limits limits) : limits_(limits) {}
  ~BufferPool();
  void close();
  void check_thread(const char* what) const;  // under AddressSanitizer only
  void drop_free();
  struct FreeBlock {
    FreeBlock* next;
  };
  static constexpr size_t kMinBlock = 64;
  static constexpr size_t kMaxBlock = size_t{1} << 30;  // max_block at most
  static constexpr size_t kClasses = 4 * (30 - 6) + 1;  // 64 bytes, then four per doubling
  // The class of a block of n bytes (n <= max_block) and that block's size.
  static size_t class_of(size_t n, size_t* block);

  const Limits limits_;
  std::array<FreeBlock*, kClasses> free_{};
  Stats stats_;
  bool closed_ = false;
  const std::thread::id owner_ = std::this_thread::get_id();
};

// An allocator on a BufferPool for std::allocate_shared (null pool: the heap), so that an object
// and its control block come from the pool too.
template <class T>
struct BufferPoolAllocator {
  using value_type = T;
  BufferPool* pool = nullptr;

  explicit BufferPoolAllocator(BufferPool* p) : pool(p) {}
  template <class U>
  BufferPoolAllocator(const BufferPoolAllocator<U>& o) : pool(o.pool) {}
  T* allocate(size_t n) {
    return static_cast<T*>(pool ? pool->allocate(n * sizeof(T)) : ::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (pool)
      pool->release(p, n * sizeof(T));
    else
      ::operator delete(p);
  }
  template <class U>
  bool operator==(const BufferPoolAllocator<U>& o) const {
    return pool == o.pool;
  }
};

}  // namespace rill
