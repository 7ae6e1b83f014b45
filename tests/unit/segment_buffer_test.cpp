// media::SegmentBuffer: a TS segment written in place into its shared buffer — growth keeps the
// bytes, finish() hands the same buffer over unless too much of it would be slack.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "rill/media/segment_buffer.h"

namespace rill::media {
namespace {

void put(SegmentBuffer& b, const std::string& s) { std::memcpy(b.append(s.size()), s.data(), s.size()); }

TEST(SegmentBuffer, StartsWithTheExpectedRoomAndGrowsKeepingTheBytes) {
  SegmentBuffer b;
  b.start(100);
  EXPECT_EQ(b.capacity(), SegmentBuffer::kMinCapacity);  // never below the minimum
  std::string expected;
  for (int i = 0; i < 1000; ++i) {  // 188 KB: past the first buffer, grown by copying
    const std::string packet(188, static_cast<char>('A' + i % 26));
    put(b, packet);
    expected += packet;
  }
  EXPECT_EQ(b.size(), expected.size());
  EXPECT_GE(b.capacity(), expected.size());
  BufferRef done = b.finish();
  EXPECT_EQ(done->view(), expected);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.capacity(), 0u);
}

TEST(SegmentBuffer, AFinishedSegmentIsTheBufferItWasWrittenIn) {
  SegmentBuffer b;
  b.start(200 * 1000);
  put(b, std::string(180 * 1000, 'x'));  // 10 % slack: kept as is
  const uint8_t* written = b.append(0);
  BufferRef done = b.finish();
  EXPECT_EQ(done->data() + done->size(), written);  // no copy
  EXPECT_EQ(done->capacity(), 200u * 1000);
}

TEST(SegmentBuffer, MuchSlackIsCopiedAwayAtFinish) {
  SegmentBuffer b;
  b.start(400 * 1000);
  put(b, std::string(100 * 1000, 'y'));  // three quarters unused
  BufferRef done = b.finish();
  EXPECT_EQ(done->size(), 100u * 1000);
  EXPECT_EQ(done->capacity(), 100u * 1000);
  EXPECT_EQ(done->view(), std::string(100 * 1000, 'y'));
}

TEST(SegmentBuffer, TheBuilderStartsAgainAfterFinishOrClear) {
  SegmentBuffer b;
  EXPECT_FALSE(b.finish());  // nothing started: nothing to hand over
  put(b, "abc");             // an append without start() starts a segment
  EXPECT_EQ(b.size(), 3u);
  b.clear();
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.capacity(), 0u);
  put(b, "defg");
  BufferRef first = b.finish();
  put(b, "hi");
  BufferRef second = b.finish();
  EXPECT_EQ(first->view(), "defg");  // the fill level reached the buffer at finish
  EXPECT_EQ(second->view(), "hi");
}

TEST(SegmentBuffer, TheMuxerWritesThroughIt) {
  protocol::TsMuxer mux(protocol::TsStreams{});
  SegmentBuffer b;
  b.start(0);
  mux.begin_segment(b);  // PAT + PMT
  std::vector<uint8_t> same;
  protocol::TsMuxer mux2(protocol::TsStreams{});
  mux2.begin_segment(same);
  BufferRef done = b.finish();
  ASSERT_EQ(done->size(), 2 * protocol::TsMuxer::kPacketSize);
  EXPECT_EQ(std::vector<uint8_t>(done->data(), done->data() + done->size()), same);
}

}  // namespace
}  // namespace rill::media
