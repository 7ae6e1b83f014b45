// OutputQueue: bounded per-subscriber queue, slow-consumer policy, partial writes.
#include "rill/media/output_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "media_test_util.h"

namespace rill::media {
namespace {

using testutil::frame;
using testutil::Kind;
using R = OutputQueue::PushResult;

BufferRef payload_of(size_t n, char c = 'x') { return SharedBuffer::copy_of(std::string(n, c)); }

// Pushes a frame whose serialized size is `n` bytes.
R push(OutputQueue& q, Kind k, uint32_t ts, size_t n = 100) {
  auto f = frame(k, ts);
  return q.push_frame(*f, payload_of(n));
}

std::string drain_iov(const OutputQueue& q, size_t max = 64) {
  std::vector<iovec> iov(max);
  const size_t n = q.fill_iov(iov.data(), max);
  std::string out;
  for (size_t i = 0; i < n; ++i) out.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  return out;
}

QueueLimits limits(size_t soft_b, size_t hard_b, uint32_t soft_d, uint32_t hard_d) {
  QueueLimits l;
  l.soft_bytes = soft_b;
  l.hard_bytes = hard_b;
  l.soft_duration_ms = soft_d;
  l.hard_duration_ms = hard_d;
  return l;
}

TEST(OutputQueue, SoftBoundDropsNonKeyVideoKeepsAudio) {
  OutputQueue q(limits(1000, 100000, 100000, 200000));
  EXPECT_EQ(push(q, Kind::Key, 0, 400), R::Queued);
  EXPECT_EQ(push(q, Kind::Inter, 40, 400), R::Queued);
  EXPECT_FALSE(q.skipping_video());
  EXPECT_EQ(push(q, Kind::Inter, 80, 400), R::Queued);  // 1200 > soft: skipping from now on
  EXPECT_TRUE(q.skipping_video());
  EXPECT_EQ(push(q, Kind::Inter, 120, 400), R::Dropped);
  EXPECT_EQ(push(q, Kind::Audio, 125, 50), R::Queued);  // audio has priority
  EXPECT_EQ(push(q, Kind::Meta, 126, 50), R::Queued);   // data too
  EXPECT_EQ(push(q, Kind::VideoHeader, 127, 50), R::Queued);  // sequence headers too
  q.push_control(payload_of(10));                       // control always
  EXPECT_EQ(push(q, Kind::Inter, 160, 400), R::Dropped);
  EXPECT_EQ(push(q, Kind::Key, 200, 400), R::Dropped);  // still over soft: the keyframe goes too
  EXPECT_EQ(q.frames_dropped(), 3u);
  EXPECT_EQ(q.bytes(), 1200u + 50 + 50 + 50 + 10);
  EXPECT_EQ(q.entries(), 7u);
}

TEST(OutputQueue, RecoversAtNextKeyframeOnceUnderSoft) {
  OutputQueue q(limits(1000, 100000, 100000, 200000));
  push(q, Kind::Key, 0, 600);
  push(q, Kind::Inter, 40, 600);
  ASSERT_TRUE(q.skipping_video());
  q.consume(1200);  // the socket caught up
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(push(q, Kind::Inter, 80, 100), R::Dropped);  // still needs a keyframe
  EXPECT_EQ(push(q, Kind::Audio, 90, 100), R::Queued);
  EXPECT_EQ(push(q, Kind::Key, 120, 100), R::Queued);
  EXPECT_FALSE(q.skipping_video());
  EXPECT_EQ(push(q, Kind::Inter, 160, 100), R::Queued);
  EXPECT_EQ(q.frames_dropped(), 1u);
}

TEST(OutputQueue, SoftBoundByDuration) {
  OutputQueue q(limits(1 << 20, 1 << 24, 1000, 5000));
  EXPECT_EQ(push(q, Kind::Key, 0), R::Queued);
  EXPECT_EQ(push(q, Kind::Audio, 500), R::Queued);
  EXPECT_EQ(push(q, Kind::Inter, 1000), R::Queued);
  EXPECT_EQ(q.duration_ms(), 1000u);
  EXPECT_FALSE(q.skipping_video());
  EXPECT_EQ(push(q, Kind::Audio, 1010), R::Queued);  // 1010 ms > soft
  EXPECT_TRUE(q.skipping_video());
  EXPECT_EQ(push(q, Kind::Inter, 1040), R::Dropped);
  EXPECT_EQ(push(q, Kind::Audio, 1050), R::Queued);
  EXPECT_EQ(q.duration_ms(), 1050u);
}

TEST(OutputQueue, GopReplayIsNotCountedAgainstTheDurationBounds) {
  // A late joiner gets a 2.5 s GOP cache with soft 1 s / hard 2 s: nothing is dropped, and the
  // bounds apply from the first live frame on.
  OutputQueue q(limits(1 << 20, 1 << 24, 1000, 2000));
  q.set_replay(true);
  EXPECT_EQ(push(q, Kind::Key, 0), R::Queued);
  for (uint32_t ts = 40; ts <= 2500; ts += 40) EXPECT_EQ(push(q, Kind::Inter, ts), R::Queued);
  q.set_replay(false);
  EXPECT_EQ(q.duration_ms(), 0u);
  EXPECT_FALSE(q.skipping_video());
  EXPECT_EQ(push(q, Kind::Inter, 2540), R::Queued);  // follows the replayed keyframe
  EXPECT_EQ(push(q, Kind::Audio, 3000), R::Queued);
  EXPECT_EQ(q.duration_ms(), 460u);
  EXPECT_EQ(push(q, Kind::Audio, 3600), R::Queued);  // 1060 ms of live media: over soft
  EXPECT_EQ(push(q, Kind::Inter, 3640), R::Dropped);
  EXPECT_EQ(push(q, Kind::Audio, 4600), R::Overflow);  // over hard
  EXPECT_EQ(q.frames_dropped(), 1u);
}

TEST(OutputQueue, HardOverflowByBytes) {
  OutputQueue q(limits(1000, 2000, 100000, 200000));
  EXPECT_EQ(push(q, Kind::Key, 0, 900), R::Queued);
  EXPECT_EQ(push(q, Kind::Audio, 10, 900), R::Queued);
  EXPECT_EQ(push(q, Kind::Audio, 20, 300), R::Overflow);  // 2100 > 2000: not queued
  EXPECT_EQ(q.bytes(), 1800u);
  EXPECT_EQ(q.entries(), 2u);
  EXPECT_EQ(push(q, Kind::Audio, 30, 200), R::Queued);  // exactly at the hard bound
  // A frame larger than the whole bound still goes into an empty queue.
  OutputQueue e(limits(1000, 2000, 100000, 200000));
  EXPECT_EQ(push(e, Kind::Key, 0, 5000), R::Queued);
}

TEST(OutputQueue, HardOverflowByDuration) {
  OutputQueue q(limits(1 << 20, 1 << 24, 2000, 8000));
  EXPECT_EQ(push(q, Kind::Key, 1000), R::Queued);
  EXPECT_EQ(push(q, Kind::Audio, 9000), R::Queued);  // exactly 8000
  EXPECT_EQ(push(q, Kind::Audio, 9001), R::Overflow);
  // Even a frame the soft rule would drop reports Overflow: a stuck consumer is disconnected.
  EXPECT_EQ(push(q, Kind::Inter, 9040), R::Overflow);
}

TEST(OutputQueue, DurationIsWrapSafe) {
  OutputQueue q(limits(1 << 20, 1 << 24, 2000, 8000));
  EXPECT_EQ(push(q, Kind::Key, 0xFFFFFF00u), R::Queued);
  EXPECT_EQ(push(q, Kind::Audio, 0x00000100u), R::Queued);  // 512 ms later, across the wrap
  EXPECT_EQ(q.duration_ms(), 512u);
  // A slightly older timestamp (audio/video interleaving) neither shrinks nor explodes it.
  EXPECT_EQ(push(q, Kind::Inter, 0x000000F0u), R::Queued);
  EXPECT_EQ(q.duration_ms(), 512u);
  EXPECT_EQ(push(q, Kind::Audio, 0xFFFFFEF0u), R::Queued);  // before the oldest: span 0 from it
  EXPECT_EQ(q.duration_ms(), 512u);
}

TEST(OutputQueue, DurationFollowsTheHeadAcrossControlEntries) {
  OutputQueue q(limits(1 << 20, 1 << 24, 100000, 200000));
  q.push_control(payload_of(10));
  EXPECT_EQ(q.duration_ms(), 0u);
  push(q, Kind::Key, 100, 10);
  q.push_control(payload_of(10));
  q.push_control(payload_of(10));
  push(q, Kind::Audio, 300, 10);
  push(q, Kind::Audio, 700, 10);
  EXPECT_EQ(q.duration_ms(), 600u);
  q.consume(10);  // the leading control entry
  EXPECT_EQ(q.duration_ms(), 600u);
  q.consume(10);  // the keyframe: the oldest media is now at 300
  EXPECT_EQ(q.duration_ms(), 400u);
  q.consume(25);  // two control entries and half of the 300 frame: still queued
  EXPECT_EQ(q.duration_ms(), 400u);
  q.consume(5);
  EXPECT_EQ(q.duration_ms(), 0u);  // one frame left
  q.consume(10);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.duration_ms(), 0u);
  push(q, Kind::Audio, 5000, 10);
  EXPECT_EQ(q.duration_ms(), 0u);
}

TEST(OutputQueue, FillIovAndPartialConsume) {
  OutputQueue q(QueueLimits{});
  q.push_control(SharedBuffer::copy_of(std::string_view("abc")));
  auto f = frame(Kind::Key, 0);
  q.push_frame(*f, SharedBuffer::copy_of(std::string_view("defgh")));
  q.push_frame(*frame(Kind::Audio, 1), SharedBuffer::copy_of(std::string_view("ij")));
  EXPECT_EQ(q.bytes(), 10u);
  EXPECT_EQ(drain_iov(q), "abcdefghij");

  iovec iov[2];
  ASSERT_EQ(q.fill_iov(iov, 2), 2u);  // bounded by max
  EXPECT_EQ(iov[0].iov_len, 3u);
  EXPECT_EQ(iov[1].iov_len, 5u);

  q.consume(4);  // "abc" and "d"
  EXPECT_EQ(q.bytes(), 6u);
  EXPECT_EQ(q.entries(), 2u);
  EXPECT_EQ(drain_iov(q), "efghij");
  ASSERT_EQ(q.fill_iov(iov, 1), 1u);
  EXPECT_EQ(std::string(static_cast<const char*>(iov[0].iov_base), iov[0].iov_len), "efgh");

  q.consume(3);
  EXPECT_EQ(drain_iov(q), "hij");
  q.consume(1);
  EXPECT_EQ(q.entries(), 1u);
  EXPECT_EQ(drain_iov(q), "ij");
  q.consume(2);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.bytes(), 0u);
  EXPECT_EQ(q.fill_iov(iov, 2), 0u);
}

TEST(OutputQueue, SharesBuffersAndReleasesThemWhenSent) {
  OutputQueue a(QueueLimits{}), b(QueueLimits{});
  BufferRef shared = payload_of(100);
  auto f = frame(Kind::Key, 0);
  a.push_frame(*f, shared);
  b.push_frame(*f, shared);
  EXPECT_EQ(shared->use_count(), 3u);
  std::vector<iovec> iov(4);
  ASSERT_EQ(a.fill_iov(iov.data(), 4), 1u);
  EXPECT_EQ(iov[0].iov_base, shared.data());  // zero-copy: points into the shared buffer
  a.consume(100);
  EXPECT_EQ(shared->use_count(), 2u);
  b.clear();
  EXPECT_EQ(shared->use_count(), 1u);
}

TEST(OutputQueue, ClearSkipsVideoUntilKeyframe) {
  OutputQueue q(QueueLimits{});
  push(q, Kind::Key, 0);
  push(q, Kind::Inter, 40);
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.bytes(), 0u);
  EXPECT_EQ(push(q, Kind::Inter, 80), R::Dropped);
  EXPECT_EQ(push(q, Kind::Key, 120), R::Queued);
  EXPECT_EQ(push(q, Kind::Inter, 160), R::Queued);
}

// With no GOP cache (or one past its bounds) a new player joins between keyframes: its first video
// frame must still be a keyframe, and what it skipped before is not a drop.
TEST(OutputQueue, ANewQueueStartsAtAKeyframe) {
  OutputQueue q(QueueLimits{});
  EXPECT_TRUE(q.skipping_video());
  EXPECT_EQ(push(q, Kind::VideoHeader, 0), R::Queued);
  EXPECT_EQ(push(q, Kind::Inter, 40), R::Dropped);
  EXPECT_EQ(push(q, Kind::Audio, 45), R::Queued);
  EXPECT_EQ(push(q, Kind::Inter, 80), R::Dropped);
  EXPECT_EQ(push(q, Kind::Key, 120), R::Queued);
  EXPECT_FALSE(q.skipping_video());
  EXPECT_EQ(push(q, Kind::Inter, 160), R::Queued);
  EXPECT_EQ(q.frames_dropped(), 0u);
}

TEST(OutputQueue, AReplayStartsTheVideo) {
  OutputQueue q(QueueLimits{});
  q.set_replay(true);
  EXPECT_EQ(push(q, Kind::Key, 0), R::Queued);
  EXPECT_EQ(push(q, Kind::Inter, 40), R::Queued);
  q.set_replay(false);
  EXPECT_FALSE(q.skipping_video());
  EXPECT_EQ(push(q, Kind::Inter, 80), R::Queued);
}

}  // namespace
}  // namespace rill::media
