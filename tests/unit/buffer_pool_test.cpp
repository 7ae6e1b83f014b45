// BufferPool: blocks reused by size class, its bounds (the largest pooled block, the bytes its free
// lists keep), the pool outliving its owner's handle while blocks are out; SharedBuffer and
// allocate_shared on it; a pooled chunk reader payload copied before it crosses to the file writer;
// a stream's frames from its publisher's pool, outliving the pool's handle in the GOP cache, HLS
// and a player's queue; under AddressSanitizer, a block released on another thread caught.
#include "rill/core/buffer_pool.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "media_test_util.h"
#include "rill/core/buffer.h"
#include "rill/media/stream.h"
#include "rill/media/stream_output.h"
#include "rill/media/testing/fake_timer_queue.h"
#include "rill/protocol/chunk_reader.h"
#include "rill/protocol/chunk_writer.h"
#include "rill/record/file_writer.h"

namespace rill {
namespace {

TEST(BufferPool, BlockSizesAreFourStepsPerDoubling) {
  auto pool = BufferPool::create();
  EXPECT_EQ(pool->block_size(1), 64u);
  EXPECT_EQ(pool->block_size(64), 64u);
  EXPECT_EQ(pool->block_size(65), 80u);  // 64 + 16
  EXPECT_EQ(pool->block_size(80), 80u);
  EXPECT_EQ(pool->block_size(81), 96u);
  EXPECT_EQ(pool->block_size(128), 128u);
  EXPECT_EQ(pool->block_size(129), 160u);
  EXPECT_EQ(pool->block_size(1000), 1024u);
  EXPECT_EQ(pool->block_size(1025), 1280u);
  EXPECT_EQ(pool->block_size(40000), 40960u);  // a keyframe: within a quarter of its size
  for (size_t n = 1; n < 70000; n += 97) {
    const size_t b = pool->block_size(n);
    EXPECT_GE(b, n);
    EXPECT_LE(b, n <= 64 ? 64 : n + n / 4);
  }
  EXPECT_EQ(pool->block_size((1u << 20) + 1), (1u << 20) + 1);  // past max_block: as asked
}

TEST(BufferPool, AReleasedBlockServesTheNextAllocationOfItsClass) {
  auto pool = BufferPool::create();
  void* a = pool->allocate(1000);
  EXPECT_EQ(pool->stats().allocated, 1u);
  pool->release(a, 1000);
  EXPECT_EQ(pool->stats().free_bytes, 1024u);
  void* b = pool->allocate(1010);  // another size of the same class
  EXPECT_EQ(b, a);
  EXPECT_EQ(pool->stats().reused, 1u);
  EXPECT_EQ(pool->stats().free_bytes, 0u);
  void* c = pool->allocate(2000);  // another class: from the heap
  EXPECT_NE(c, a);
  EXPECT_EQ(pool->stats().allocated, 2u);
  EXPECT_EQ(pool->stats().blocks_out, 2u);
  pool->release(b, 1010);
  pool->release(c, 2000);
  EXPECT_EQ(pool->stats().blocks_out, 0u);
}

TEST(BufferPool, KeepsNoMoreThanItsBounds) {
  BufferPool::Limits lim;
  lim.max_block = 4096;
  lim.max_free_bytes = 3 * 1024;
  auto pool = BufferPool::create(lim);
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(pool->allocate(1024));
  void* big = pool->allocate(5000);  // past max_block
  EXPECT_EQ(pool->stats().unpooled, 1u);
  pool->release(big, 5000);
  EXPECT_EQ(pool->stats().free_bytes, 0u);  // not kept
  for (void* b : blocks) pool->release(b, 1024);
  EXPECT_EQ(pool->stats().free_bytes, 3u * 1024);  // three kept, two back to the heap
  for (int i = 0; i < 5; ++i) blocks[i] = pool->allocate(1024);
  EXPECT_EQ(pool->stats().reused, 3u);
  EXPECT_EQ(pool->stats().allocated, 5u + 2u);
  for (void* b : blocks) pool->release(b, 1024);
}

TEST(BufferPool, OutlivesItsHandleUntilTheLastBufferGoes) {
  auto pool = BufferPool::create();
  BufferRef kept = SharedBuffer::copy_of(std::string_view("kept past the pool's owner"));
  BufferRef pooled = SharedBuffer::create(100, pool.get());
  pooled->append(kept.span());
  BufferRef spare = SharedBuffer::create(100, pool.get());
  spare.reset();  // on the free list when the handle goes
  pool.reset();   // the owner goes first (a worker's teardown); the pool waits for `pooled`
  EXPECT_EQ(pooled->view(), kept->view());
  pooled.reset();  // the last block: the pool goes with it (LeakSanitizer checks)
}

TEST(BufferPool, SharedBuffersAndSharedObjectsComeBackToIt) {
  auto pool = BufferPool::create();
  const uint8_t* first = nullptr;
  for (int i = 0; i < 3; ++i) {
    BufferRef b = SharedBuffer::create(3000, pool.get());
    EXPECT_EQ(b->pool(), pool.get());
    EXPECT_EQ(b->capacity(), 3000u);  // as asked, whatever the block
    if (i == 0) first = b->data();
    EXPECT_EQ(b->data(), first);  // the same block each time
  }
  EXPECT_EQ(pool->stats().allocated, 1u);
  EXPECT_EQ(SharedBuffer::create(10)->pool(), nullptr);

  struct Frame {
    uint64_t a = 1, b = 2;
  };
  for (int i = 0; i < 3; ++i) {
    auto f = std::allocate_shared<Frame>(BufferPoolAllocator<Frame>(pool.get()));
    EXPECT_EQ(f->b, 2u);
  }
  EXPECT_EQ(pool->stats().allocated, 2u);  // the object with its control block: one more block
  EXPECT_EQ(pool->stats().blocks_out, 0u);
  auto heap = std::allocate_shared<Frame>(BufferPoolAllocator<Frame>(nullptr));
  EXPECT_EQ(pool->stats().blocks_out, 0u);
}

TEST(BufferPool, ChunkReaderPayloadsComeFromItsPool) {
  auto pool = BufferPool::create();
  std::vector<protocol::RtmpMessage> got;
  protocol::ChunkReader reader([&](protocol::RtmpMessage&& m) { got.push_back(std::move(m)); });
  reader.use_pool(pool.get());
  protocol::RtmpMessage m;
  m.type_id = protocol::msg_type::Video;
  m.csid = 6;
  m.stream_id = 1;
  m.payload = SharedBuffer::copy_of(std::string_view("0123456789"));
  const BufferRef bytes = protocol::ChunkWriter::serialize(m, 128);
  reader.feed(bytes.span());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].payload->pool(), pool.get());
  EXPECT_EQ(got[0].payload->view(), "0123456789");
}

TEST(BufferPool, APooledBufferIsCopiedBeforeTheFileWriterTakesIt) {
  char dir[] = "/tmp/rill-buffer-pool-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/f.bin";
  auto pool = BufferPool::create();
  {
    record::FileWriter w;
    auto f = w.open(path);
    BufferRef b = SharedBuffer::create(5, pool.get());
    b->append("bytes", 5);
    EXPECT_TRUE(w.append(f, std::move(b)));
    // Released here, on this thread, as the copy went to the writer's: the pool is not the thread's.
    EXPECT_EQ(pool->stats().blocks_out, 0u);
    w.close(f);
    w.wait_idle();
    EXPECT_EQ(f->error(), 0);
  }
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "bytes");
  std::remove(path.c_str());
  ::rmdir(dir);
}

// A publisher's payloads from the worker's pool, as RtmpSession's chunk reader makes them.
BufferRef pooled(BufferPool& pool, const BufferRef& bytes) {
  BufferRef b = SharedBuffer::create(bytes.size(), &pool);
  b->append(bytes.span());
  return b;
}

struct HeldFrames : media::Subscriber {
  std::vector<media::FramePtr> frames;  // a player's queue: its last ten frames are not sent yet
  void on_frame(const media::FramePtr& f) override {
    if (frames.size() == 10) frames.erase(frames.begin());
    frames.push_back(f);
  }
};

TEST(BufferPool, AStreamsFramesOutliveThePoolsHandle) {
  using namespace media::testutil;
  using media::MediaType;
  auto pool = BufferPool::create();
  BufferPool* raw = pool.get();
  FakeTimerQueue timers;
  auto log =
      std::make_shared<spdlog::logger>("buffer_pool_test", std::make_shared<spdlog::sinks::null_sink_st>());
  auto registry = std::make_unique<media::StreamRegistry>(timers, log, media::default_outputs);
  config::AppConfig app;
  app.name = "live";
  app.hls.enabled = true;
  media::Stream& s = registry->get_or_create(media::StreamKey{"live", "cam"}, app);
  HeldFrames player;
  s.add_subscriber(&player);
  int publisher = 0;
  ASSERT_TRUE(s.attach_publisher(&publisher, media::PublishOrigin::Ingest));
  s.publish(MediaType::Video, 0, pooled(*raw, avc_seq_header()));
  s.publish(MediaType::Audio, 0, pooled(*raw, aac_seq_header()));
  for (uint32_t ts = 0; ts < 3000; ts += 40) {
    s.publish(MediaType::Video, ts, pooled(*raw, ts % 1000 == 0 ? avc_keyframe(3000) : avc_inter(800)));
    s.publish(MediaType::Audio, ts + 10, pooled(*raw, aac_raw(200)));
  }
  ASSERT_FALSE(player.frames.empty());
  // The frame and its control block come from the pool of its payload.
  EXPECT_EQ(player.frames.back()->payload->pool(), raw);
  EXPECT_GE(raw->stats().blocks_out, 2 * player.frames.size());
  EXPECT_GT(raw->stats().reused, 0u);  // the GOP cache and the player dropped frames: their blocks came back

  pool.reset();  // the worker's handle goes first; the GOP cache, HLS and the player still hold frames
  const media::FramePtr last = player.frames.back();
  s.detach_publisher(&publisher);
  registry.reset();  // the stream, its GOP cache and its outputs go
  EXPECT_EQ(last->payload->pool(), raw);
  EXPECT_GT(last->payload->size(), 0u);
  player.frames.clear();  // the last blocks but one (LeakSanitizer checks that the pool goes with it)
}

#if defined(__SANITIZE_ADDRESS__)
#define RILL_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RILL_TEST_ASAN 1
#endif
#endif

#ifdef RILL_TEST_ASAN
TEST(BufferPoolDeathTest, ABlockReleasedOnAnotherThreadAborts) {
  EXPECT_DEATH(
      {
        auto pool = BufferPool::create();
        BufferRef b = SharedBuffer::create(100, pool.get());
        std::thread([b = std::move(b)]() mutable { b.reset(); }).join();
      },
      "on a thread other than the pool's");
}
#endif

}  // namespace
}  // namespace rill
