// GopCache: what a late subscriber is replayed.
#include "rill/media/gop_cache.h"

#include <gtest/gtest.h>

#include <vector>

#include "media_test_util.h"

namespace rill::media {
namespace {

using testutil::frame;
using testutil::Kind;

std::vector<FramePtr> replayed(const GopCache& c) {
  std::vector<FramePtr> out;
  c.replay([&](const FramePtr& f) { out.push_back(f); });
  return out;
}

TEST(GopCache, KeyframeStartsNewGopAndHeadersAreKeptApart) {
  GopCache c(true, 1 << 20, 1000);
  auto meta = frame(Kind::Meta, 0), vh = frame(Kind::VideoHeader, 0), ah = frame(Kind::AudioHeader, 0);
  c.add(meta);
  c.add(vh);
  c.add(ah);
  c.add(frame(Kind::Inter, 10));  // no GOP open: useless to a new player
  c.add(frame(Kind::Audio, 12));  // video seen: audio before the first keyframe is not cached
  EXPECT_EQ(c.gop_frames(), 0u);

  auto k1 = frame(Kind::Key, 40), i1 = frame(Kind::Inter, 80), a1 = frame(Kind::Audio, 85);
  c.add(k1);
  c.add(i1);
  c.add(a1);
  EXPECT_EQ(c.gop_frames(), 3u);
  EXPECT_EQ(c.metadata(), meta);
  EXPECT_EQ(c.video_header(), vh);
  EXPECT_EQ(c.audio_header(), ah);

  auto k2 = frame(Kind::Key, 2040), a2 = frame(Kind::Audio, 2050);
  c.add(k2);
  c.add(a2);
  ASSERT_EQ(c.gop_frames(), 2u);
  EXPECT_EQ(c.gop()[0], k2);
  EXPECT_EQ(c.gop()[1], a2);
  EXPECT_EQ(c.gop_bytes(), k2->payload.size() + a2->payload.size());

  // Replay order: metadata, video header, audio header, then the GOP from its keyframe.
  EXPECT_EQ(replayed(c), (std::vector<FramePtr>{meta, vh, ah, k2, a2}));
}

TEST(GopCache, LatestMetadataAndHeadersWin) {
  GopCache c(true, 1 << 20, 1000);
  c.add(frame(Kind::Meta, 0));
  c.add(frame(Kind::VideoHeader, 0));
  auto meta2 = frame(Kind::Meta, 500), vh2 = frame(Kind::VideoHeader, 500), ah2 = frame(Kind::AudioHeader, 500);
  c.add(meta2);
  c.add(vh2);
  c.add(ah2);
  EXPECT_EQ(c.metadata(), meta2);
  EXPECT_EQ(c.video_header(), vh2);
  EXPECT_EQ(c.audio_header(), ah2);
  EXPECT_EQ(c.gop_frames(), 0u);  // headers never enter the GOP list
}

TEST(GopCache, AudioOnlyStreamKeepsASlidingWindow) {
  GopCache c(true, 1 << 20, 1000);
  c.add(frame(Kind::AudioHeader, 0));
  for (uint32_t i = 0; i < 10; ++i) c.add(frame(Kind::Audio, i * 23));
  EXPECT_EQ(c.gop_frames(), 10u);  // a player starts at once
  for (uint32_t i = 10; i < 200; ++i) c.add(frame(Kind::Audio, i * 23));
  ASSERT_LE(c.gop_frames(), GopCache::kAudioOnlyWindowFrames);
  ASSERT_GE(c.gop_frames(), 40u);
  EXPECT_LE(c.gop().back()->timestamp - c.gop().front()->timestamp, GopCache::kAudioOnlyWindowMs);
  EXPECT_EQ(c.gop().back()->timestamp, 199u * 23);

  // Sparse audio: the window is bounded by time too.
  GopCache sparse(true, 1 << 20, 1000);
  for (uint32_t i = 0; i < 10; ++i) sparse.add(frame(Kind::Audio, i * 400));
  EXPECT_EQ(sparse.gop_frames(), 3u);  // 2800, 3200, 3600

  // Video shows up: the window goes, and the GOP proper starts at the keyframe.
  c.add(frame(Kind::Inter, 5000));
  EXPECT_EQ(c.gop_frames(), 0u);
  c.add(frame(Kind::Audio, 5010));
  EXPECT_EQ(c.gop_frames(), 0u);
  auto k = frame(Kind::Key, 5040);
  c.add(k);
  ASSERT_EQ(c.gop_frames(), 1u);
  EXPECT_EQ(c.gop()[0], k);
}

TEST(GopCache, VideoHeaderEndsAudioOnlyWindow) {
  GopCache c(true, 1 << 20, 1000);
  c.add(frame(Kind::Audio, 0));
  c.add(frame(Kind::Audio, 23));
  EXPECT_EQ(c.gop_frames(), 2u);
  c.add(frame(Kind::VideoHeader, 30));
  EXPECT_EQ(c.gop_frames(), 0u);
  c.add(frame(Kind::Audio, 46));
  EXPECT_EQ(c.gop_frames(), 0u);
}

TEST(GopCache, FrameBoundDropsGopUntilNextKeyframe) {
  GopCache c(true, 1 << 20, 5);
  c.add(frame(Kind::VideoHeader, 0));
  c.add(frame(Kind::Key, 0));
  for (uint32_t i = 1; i < 5; ++i) c.add(frame(Kind::Inter, i * 40));
  EXPECT_EQ(c.gop_frames(), 5u);
  c.add(frame(Kind::Inter, 200));  // sixth frame: past the bound
  EXPECT_EQ(c.gop_frames(), 0u);
  EXPECT_EQ(c.gop_bytes(), 0u);
  c.add(frame(Kind::Inter, 240));
  c.add(frame(Kind::Audio, 250));
  EXPECT_EQ(c.gop_frames(), 0u);  // nothing until the next keyframe
  EXPECT_TRUE(c.video_header());  // headers survive
  auto k = frame(Kind::Key, 2000);
  c.add(k);
  c.add(frame(Kind::Inter, 2040));
  EXPECT_EQ(c.gop_frames(), 2u);
  EXPECT_EQ(c.gop()[0], k);
}

TEST(GopCache, ByteBoundDropsGopUntilNextKeyframe) {
  const size_t key_size = frame(Kind::Key, 0, 1000)->payload.size();
  GopCache c(true, key_size + 500, 1000);
  c.add(frame(Kind::Key, 0, 1000));
  c.add(frame(Kind::Inter, 40, 300));
  EXPECT_EQ(c.gop_frames(), 2u);
  c.add(frame(Kind::Inter, 80, 300));  // past max bytes
  EXPECT_EQ(c.gop_frames(), 0u);
  c.add(frame(Kind::Inter, 120, 10));
  EXPECT_EQ(c.gop_frames(), 0u);
  // A keyframe that alone exceeds the bound is not cached either.
  c.add(frame(Kind::Key, 2000, 5000));
  EXPECT_EQ(c.gop_frames(), 0u);
  c.add(frame(Kind::Key, 4000, 100));
  EXPECT_EQ(c.gop_frames(), 1u);
}

TEST(GopCache, DisabledKeepsOnlyMetadataAndHeaders) {
  GopCache c(false, 1 << 20, 1000);
  auto meta = frame(Kind::Meta, 0), vh = frame(Kind::VideoHeader, 0), ah = frame(Kind::AudioHeader, 0);
  c.add(meta);
  c.add(vh);
  c.add(ah);
  c.add(frame(Kind::Key, 0));
  c.add(frame(Kind::Inter, 40));
  c.add(frame(Kind::Audio, 42));
  EXPECT_EQ(c.gop_frames(), 0u);
  EXPECT_EQ(replayed(c), (std::vector<FramePtr>{meta, vh, ah}));
  // Audio-only streams get no window either.
  GopCache a(false, 1 << 20, 1000);
  a.add(frame(Kind::Audio, 0));
  EXPECT_EQ(a.gop_frames(), 0u);
}

TEST(GopCache, ClearForgetsEverything) {
  GopCache c(true, 1 << 20, 1000);
  c.add(frame(Kind::Meta, 0));
  c.add(frame(Kind::VideoHeader, 0));
  c.add(frame(Kind::AudioHeader, 0));
  c.add(frame(Kind::Key, 0));
  c.add(frame(Kind::Audio, 10));
  c.clear();
  EXPECT_FALSE(c.metadata());
  EXPECT_FALSE(c.video_header());
  EXPECT_FALSE(c.audio_header());
  EXPECT_EQ(c.gop_frames(), 0u);
  EXPECT_EQ(c.gop_bytes(), 0u);
  EXPECT_TRUE(replayed(c).empty());
  // After a clear the stream may turn out audio-only.
  c.add(frame(Kind::Audio, 20));
  EXPECT_EQ(c.gop_frames(), 1u);
}

}  // namespace
}  // namespace rill::media
