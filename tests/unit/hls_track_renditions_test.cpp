// HLS renditions of a multitrack publish (media/hls_track_renditions.h): the stream's segmenter
// moves to NAME_track0 when another video track shows up before its first segment, each track is
// cut by the group's clock with the same numbers, and NAME.m3u8 becomes their multivariant
// playlist with the shared audio rendition. Also the names (media/rendition_group.h).
#include "rill/media/hls_track_renditions.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <memory>
#include <string>

#include "media_test_util.h"
#include "rill/media/hls_responder.h"
#include "rill/media/hls_segmenter.h"
#include "rill/media/hls_store.h"
#include "rill/media/rendition_group.h"
#include "rill/media/testing/fake_timer_queue.h"

namespace rill::media {
namespace {

using namespace testutil;
using namespace std::chrono_literals;

// Track `track`'s copy of a tag, as Stream::publish re-frames a multitrack tag.
FramePtr track_frame(MediaType t, uint32_t ts, BufferRef body, uint8_t track) {
  auto f = std::make_shared<MediaFrame>(*tag_frame(t, ts, std::move(body)));
  f->view = FrameView::Reframed;
  f->track = track;
  return f;
}

class HlsTrackRenditionsTest : public ::testing::Test {
 protected:
  HlsTrackRenditionsTest() {
    store_ = std::make_unique<HlsStore>(timers_, *log_);
    cfg_.enabled = true;
    cfg_.fragment = 1000ms;
    cfg_.window = 20;
  }
  void video(HlsSegmenter& s, uint32_t ts, bool key, uint8_t tracks) {
    s.on_frame(*tag_frame(MediaType::Video, ts, key ? avc_keyframe(2000) : avc_inter(500)));
    for (uint8_t t = 1; t < tracks; ++t)
      s.on_track_frame(track_frame(MediaType::Video, ts, key ? avc_keyframe(1000) : avc_inter(250), t));
  }
  // Headers of track 0 (plain tags) and of tracks 1.. (re-framed), then 25 fps video with a
  // keyframe every 400 ms on every track and AAC (track 0's) every 23 ms, for [0, to) ms.
  void publish(HlsSegmenter& s, uint8_t tracks, uint32_t to) {
    s.on_frame(*tag_frame(MediaType::Video, 0, avc_seq_header()));
    s.on_frame(*tag_frame(MediaType::Audio, 0, aac_seq_header()));
    for (uint8_t t = 1; t < tracks; ++t)
      s.on_track_frame(track_frame(MediaType::Video, 0, avc_seq_header(), t));
    for (uint32_t v = 0, a = 0; v < to || a < to;) {
      if (v <= a) {
        video(s, v, v % 400 == 0, tracks);
        v += 40;
      } else {
        s.on_frame(*tag_frame(MediaType::Audio, a, aac_raw(200)));
        a += 23;
      }
    }
  }
  const HlsStreamState* state(const std::string& name) const { return store_->find(StreamKey{"live", name}); }

  FakeTimerQueue timers_{1000000};
  std::shared_ptr<spdlog::logger> log_ =
      std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_st>());
  std::unique_ptr<HlsStore> store_;
  config::HlsConfig cfg_;
};

TEST_F(HlsTrackRenditionsTest, EachVideoTrackIsAnAlignedRenditionOfTheMaster) {
  HlsSegmenter s(*store_, StreamKey{"live", "mt"}, cfg_, *log_);
  publish(s, 3, 4040);
  const HlsStreamState* group = state("mt");
  ASSERT_NE(group, nullptr);
  EXPECT_FALSE(group->has_segments());  // its segments are track 0's, under mt_track0
  std::vector<const HlsStreamState*> tracks;
  for (const char* n : {"mt_track0", "mt_track1", "mt_track2"}) {
    tracks.push_back(state(n));
    ASSERT_NE(tracks.back(), nullptr) << n;
  }
  // Cut at the first keyframe at or after each second (1200, 2000, 3200, 4000), numbered alike.
  const auto& first = tracks[0]->playlist().state().segments;
  ASSERT_EQ(first.size(), 4u);
  for (const HlsStreamState* t : tracks) {
    const auto& segs = t->playlist().state().segments;
    ASSERT_EQ(segs.size(), first.size()) << t->name();
    for (size_t i = 0; i < segs.size(); ++i) {
      EXPECT_EQ(segs[i].sequence, first[i].sequence) << t->name();
      EXPECT_NEAR(segs[i].duration_s, first[i].duration_s, 1e-9) << t->name();
    }
  }
  EXPECT_NEAR(first[0].duration_s, 1.2, 1e-9);
  // The master: the shared audio rendition and one variant per track, in track order, each
  // with the audio group and the codecs it muxes.
  ASSERT_TRUE(group->multivariant());
  const std::string master(group->multivariant()->view());
  EXPECT_EQ(
      master.rfind("#EXTM3U\n#EXT-X-VERSION:3\n"
                   "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"track 0\",DEFAULT=YES,AUTOSELECT=YES\n",
                   0),
      0u)
      << master;
  size_t at = 0;
  for (const char* uri : {"\nmt_track0.m3u8\n", "\nmt_track1.m3u8\n", "\nmt_track2.m3u8\n"}) {
    const size_t next = master.find(uri, at);
    ASSERT_NE(next, std::string::npos) << uri << master;
    const size_t line = master.rfind("#EXT-X-STREAM-INF:", next);
    const std::string inf = master.substr(line, next - line);
    EXPECT_NE(inf.find("CODECS=\"avc1."), std::string::npos) << inf;
    EXPECT_NE(inf.find(",mp4a.40.2\""), std::string::npos) << inf;
    EXPECT_NE(inf.find("AUDIO=\"audio\""), std::string::npos) << inf;
    at = next + 1;
  }
  // NAME.m3u8 answers the master; a track's playlist is its media playlist.
  protocol::HlsObjectName playlist;
  playlist.playlist = true;
  const HlsResponse r = respond_hls(group, group->key(), playlist);
  const auto* a = std::get_if<HlsAnswer>(&r);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->head.status, 200);
  EXPECT_EQ(std::string(a->body->view()), master);
  s.finish();
  for (const char* n : {"mt_track0", "mt_track1", "mt_track2", "mt"}) EXPECT_FALSE(state(n)->live()) << n;
}

TEST_F(HlsTrackRenditionsTest, TrackAfterTheFirstSegmentLeavesHlsToTrackZero) {
  HlsSegmenter s(*store_, StreamKey{"live", "mt"}, cfg_, *log_);
  publish(s, 1, 2040);
  s.on_track_frame(track_frame(MediaType::Video, 2040, avc_seq_header(), 1));
  video(s, 2080, true, 2);
  EXPECT_TRUE(state("mt")->has_segments());
  EXPECT_FALSE(state("mt")->multivariant());
  EXPECT_EQ(state("mt_track1"), nullptr);
  EXPECT_EQ(state("mt_track0"), nullptr);
}

TEST_F(HlsTrackRenditionsTest, LowLatencyPlaylistsReportTheOtherTracks) {
  cfg_.low_latency = true;
  cfg_.part = 200ms;
  HlsSegmenter s(*store_, StreamKey{"live", "mt"}, cfg_, *log_);
  publish(s, 3, 2040);
  for (int i = 0; i < 3; ++i) {
    const std::string name = "mt_track" + std::to_string(i);
    ASSERT_NE(state(name), nullptr) << name;
    const std::string text(state(name)->playlist_text()->view());
    for (int j = 0; j < 3; ++j) {
      const std::string report = "#EXT-X-RENDITION-REPORT:URI=\"mt_track" + std::to_string(j) + ".m3u8\"";
      EXPECT_EQ(text.find(report) != std::string::npos, i != j) << name << " / " << j << "\n" << text;
    }
  }
}

TEST(TrackRenditionNames, NameAndParse) {
  EXPECT_EQ(track_rendition_name("cam", 2), "cam_track2");
  auto t = track_rendition_of("cam_track12");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stream, "cam");
  EXPECT_EQ(t->track, 12);
  EXPECT_EQ(track_rendition_of("a_track_track0")->stream, "a_track");
  for (const char* no :
       {"cam", "_track1", "cam_track", "cam_track01", "cam_track256", "cam_track1x", "cam_trackx"})
    EXPECT_FALSE(track_rendition_of(no)) << no;
}

}  // namespace
}  // namespace rill::media
