// MediaFrame: the tag-header facts Stream::publish puts on each frame (so outputs such as the HLS
// segmenter never parse the header again), and the frame's size.
#include "rill/media/media_frame.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <memory>
#include <vector>

#include "media_test_util.h"
#include "rill/media/stream.h"
#include "rill/media/subscriber.h"
#include "rill/media/testing/fake_timer_queue.h"

namespace rill::media {
namespace {

using namespace testutil;
using Bytes = std::vector<uint8_t>;

FramePtr video(const Bytes& b) { return tag_frame(MediaType::Video, 0, bytes(b)); }
FramePtr audio(const Bytes& b) { return tag_frame(MediaType::Audio, 0, bytes(b)); }
Bytes data_of(const FramePtr& f) { return {f->data().begin(), f->data().end()}; }

TEST(MediaFrameTest, StaysSmall) {
  // Allocated per message and held by every queue it is in: the facts fill what was padding.
  if constexpr (sizeof(void*) == 8) {
    EXPECT_EQ(sizeof(MediaFrame), 56u);
  }
}

TEST(MediaFrameTest, AvcFacts) {
  const FramePtr key = tag_frame(MediaType::Video, 0, avc_keyframe(5, 80));
  EXPECT_EQ(key->codec, FrameCodec::H264);
  EXPECT_TRUE(key->coded && key->keyframe);
  EXPECT_FALSE(key->sequence_header);
  EXPECT_EQ(key->composition_time, 80);
  EXPECT_EQ(key->data_offset, 5u);
  EXPECT_EQ(data_of(key), (Bytes{0, 0, 0, 5, 0x65, 0x88, 0x88, 0x88, 0x88}));

  const FramePtr inter = tag_frame(MediaType::Video, 0, avc_inter());
  EXPECT_TRUE(inter->coded);
  EXPECT_FALSE(inter->keyframe);

  const FramePtr header = tag_frame(MediaType::Video, 0, avc_seq_header());
  EXPECT_TRUE(header->sequence_header && header->keyframe);  // a header counts as a keyframe
  EXPECT_FALSE(header->coded);
  EXPECT_EQ(header->data().front(), 0x01);  // configurationVersion

  const FramePtr end = video({0x17, 0x02, 0, 0, 0});  // end of sequence
  EXPECT_FALSE(end->coded || end->sequence_header);
  EXPECT_EQ(video({0x57, 0x00})->codec, FrameCodec::None);  // command frame: no video
}

TEST(MediaFrameTest, EnhancedRtmpFacts) {
  // hvc1 CodedFrames behind a ModEx prefix (3 bytes of ModEx data), composition time 0x28.
  const FramePtr modex =
      video({0x97, 0x02, 0xAA, 0xBB, 0xCC, 0x01, 'h', 'v', 'c', '1', 0x00, 0x00, 0x28, 0x26});
  EXPECT_EQ(modex->codec, FrameCodec::HEVC);
  EXPECT_TRUE(modex->coded && modex->keyframe);
  EXPECT_EQ(modex->composition_time, 0x28);
  EXPECT_EQ(data_of(modex), Bytes{0x26});

  const FramePtr x = video({0xA3, 'h', 'v', 'c', '1', 0x02});  // CodedFramesX: no cts on the wire
  EXPECT_EQ(x->codec, FrameCodec::HEVC);
  EXPECT_FALSE(x->keyframe);
  EXPECT_EQ(x->data_offset, 5u);

  const FramePtr av1 = video({0x91, 'a', 'v', '0', '1', 0x12, 0x00});
  EXPECT_EQ(av1->codec, FrameCodec::AV1);
  EXPECT_EQ(codec_description(*av1), "av01");
  // Multitrack (one track, hvc1): several tracks' data, no one codec.
  EXPECT_EQ(video({0x96, 0x01, 'h', 'v', 'c', '1', 0x00, 0x00, 0x00, 0x00})->codec, FrameCodec::None);
  EXPECT_EQ(codec_description(*video({0x27, 0x01, 0, 0, 0})), "H.264");
}

TEST(MediaFrameTest, AudioFacts) {
  const FramePtr asc = tag_frame(MediaType::Audio, 0, aac_seq_header());
  EXPECT_EQ(asc->codec, FrameCodec::AAC);
  EXPECT_TRUE(asc->sequence_header);
  EXPECT_FALSE(asc->coded);
  EXPECT_EQ(data_of(asc), (Bytes{0x12, 0x10}));

  const FramePtr raw = tag_frame(MediaType::Audio, 0, aac_raw(3));
  EXPECT_TRUE(raw->coded);
  EXPECT_FALSE(raw->sequence_header || raw->keyframe);
  EXPECT_EQ(data_of(raw), (Bytes{0x21, 0x21, 0x21}));

  const FramePtr mp3 = audio({0x2F, 0xFF, 0xFB});
  EXPECT_EQ(mp3->codec, FrameCodec::MP3);
  EXPECT_TRUE(mp3->coded);
  EXPECT_EQ(mp3->data_offset, 1u);

  const FramePtr opus = audio({0x91, 'O', 'p', 'u', 's', 0x01});
  EXPECT_EQ(opus->codec, FrameCodec::Opus);
  EXPECT_EQ(codec_description(*opus), "audio format 9 (Opus)");
}

struct Keep : Subscriber {
  std::vector<FramePtr> frames;
  void on_frame(const FramePtr& f) override { frames.push_back(f); }
};

TEST(MediaFrameTest, StreamPublishPutsTheFactsOnTheFrame) {
  FakeTimerQueue timers;
  auto log = std::make_shared<spdlog::logger>("frame_test", std::make_shared<spdlog::sinks::null_sink_st>());
  StreamRegistry registry(timers, log, {});
  config::AppConfig app;
  app.name = "live";
  Stream& s = registry.get_or_create(StreamKey{"live", "cam"}, app);
  Keep keep;
  s.add_subscriber(&keep);
  int owner = 0;
  ASSERT_TRUE(s.attach_publisher(&owner, PublishOrigin::Ingest));
  s.publish(MediaType::Video, 0, avc_seq_header());
  s.publish(MediaType::Video, 0, avc_keyframe(5, 40));
  s.publish(MediaType::Audio, 0, aac_raw(4));
  ASSERT_EQ(keep.frames.size(), 3u);
  EXPECT_TRUE(keep.frames[0]->sequence_header);
  EXPECT_EQ(keep.frames[1]->codec, FrameCodec::H264);
  EXPECT_TRUE(keep.frames[1]->coded && keep.frames[1]->keyframe);
  EXPECT_EQ(keep.frames[1]->composition_time, 40);
  EXPECT_EQ(keep.frames[2]->codec, FrameCodec::AAC);
  EXPECT_EQ(keep.frames[2]->data().size(), 4u);
  s.remove_subscriber(&keep);
  s.detach_publisher(&owner);
}

}  // namespace
}  // namespace rill::media
