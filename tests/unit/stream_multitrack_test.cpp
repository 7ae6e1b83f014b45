// Stream with an E-RTMP v2 multitrack publish: per-track views, TrackSelection filtering of live
// frames and of the GOP replay, per-track sequence headers, what outputs (track 0) get.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <memory>
#include <vector>

#include "media_test_util.h"
#include "rill/media/stream.h"
#include "rill/media/testing/fake_timer_queue.h"
#include "rill/protocol/flv_multitrack.h"

namespace rill::media {
namespace {

using namespace testutil;
using namespace std::chrono_literals;
using Bytes = std::vector<uint8_t>;

struct Player : Subscriber {
  std::vector<FramePtr> frames;
  void on_frame(const FramePtr& f) override { frames.push_back(f); }
  std::vector<Bytes> payloads(MediaType t) const {
    std::vector<Bytes> out;
    for (const auto& f : frames)
      if (f->type == t) out.push_back(vec(f->payload));
    return out;
  }
};

// A ManyTracks multitrack tag of `n` tracks, all carrying the same single-track tag's payload but
// for one distinguishing byte appended per track (track id); and what track `id` re-frames to.
Bytes many_tracks(const BufferRef& single, bool video, uint8_t n) {
  const protocol::SingleTrackParts p = protocol::single_track_parts(single.span(), video);
  std::vector<Bytes> bodies;
  protocol::MultitrackTag t;
  t.is_video = video;
  t.frame_type = p.frame_type;
  t.type = protocol::AvMultitrackType::ManyTracks;
  t.packet_type = p.packet_type;
  for (uint8_t id = 0; id < n; ++id) {
    Bytes b(p.track.body.begin(), p.track.body.end());
    b.push_back(id);
    bodies.push_back(b);
  }
  for (uint8_t id = 0; id < n; ++id) t.tracks.push_back({id, p.track.fourcc, bodies[id]});
  return protocol::write_multitrack_tag(t);
}
Bytes with_byte(const BufferRef& single, uint8_t id) {
  Bytes b = vec(single);
  b.push_back(id);
  return b;
}

class StreamMultitrackTest : public ::testing::Test {
 protected:
  StreamMultitrackTest() {
    registry_ = std::make_unique<StreamRegistry>(
        timers_, std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_st>()),
        default_outputs);
    cfg_.name = "live";
    cfg_.play_wait = 0ms;
  }
  Stream& stream() { return registry_->get_or_create(StreamKey{"live", "cam"}, cfg_); }
  // Headers (video 3 tracks, audio plain), then a GOP: key, inter, audio.
  void publish_gop(Stream& s, uint32_t ts) {
    if (ts == 0) {
      s.publish(MediaType::Video, 0, bytes(many_tracks(avc_seq_header(), true, 3)));
      s.publish(MediaType::Audio, 0, aac_seq_header());
    }
    s.publish(MediaType::Video, ts, bytes(many_tracks(avc_keyframe(), true, 3)));
    s.publish(MediaType::Video, ts + 40, bytes(many_tracks(avc_inter(), true, 3)));
    s.publish(MediaType::Audio, ts + 40, aac_raw());
  }

  FakeTimerQueue timers_;
  config::AppConfig cfg_;
  std::unique_ptr<StreamRegistry> registry_;
  int pub_ = 0;
};

TEST_F(StreamMultitrackTest, EachSelectionGetsItsView) {
  Stream& s = stream();
  Player all, t0, t2;
  all.set_track_selection(TrackSelection::all());
  t0.set_track_selection(TrackSelection::one(0));
  t2.set_track_selection(TrackSelection::one(2));
  s.add_subscriber(&all);
  s.add_subscriber(&t0);
  s.add_subscriber(&t2);
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  publish_gop(s, 0);

  // All: byte-identical to what was published (multitrack video, plain audio).
  EXPECT_EQ(all.payloads(MediaType::Video),
            (std::vector<Bytes>{many_tracks(avc_seq_header(), true, 3), many_tracks(avc_keyframe(), true, 3),
                                many_tracks(avc_inter(), true, 3)}));
  EXPECT_EQ(all.payloads(MediaType::Audio), (std::vector<Bytes>{vec(aac_seq_header()), vec(aac_raw())}));
  // Track 0: legacy AVC tags of track 0, and the plain audio.
  EXPECT_EQ(t0.payloads(MediaType::Video),
            (std::vector<Bytes>{with_byte(avc_seq_header(), 0), with_byte(avc_keyframe(), 0),
                                with_byte(avc_inter(), 0)}));
  EXPECT_EQ(t0.payloads(MediaType::Audio).size(), 2u);
  // Track 2: its own video, no audio (the audio is track 0's).
  EXPECT_EQ(t2.payloads(MediaType::Video),
            (std::vector<Bytes>{with_byte(avc_seq_header(), 2), with_byte(avc_keyframe(), 2),
                                with_byte(avc_inter(), 2)}));
  EXPECT_TRUE(t2.payloads(MediaType::Audio).empty());
  EXPECT_TRUE(t2.frames[0]->sequence_header);
  EXPECT_EQ(t2.frames[0]->codec, FrameCodec::H264);

  EXPECT_TRUE(s.has_track(0) && s.has_track(1) && s.has_track(2));
  EXPECT_FALSE(s.has_track(3));
  EXPECT_TRUE(s.has_headers());
  EXPECT_EQ(s.audio_track_for(2), TrackSelection::one(2, 0));  // no audio of its own: track 0's
  EXPECT_EQ(s.audio_track_for(0), TrackSelection::one(0));
  Player t2a;
  t2a.set_track_selection(s.audio_track_for(2));
  s.add_subscriber(&t2a);
  s.publish(MediaType::Audio, 80, aac_raw());
  // Replayed: the header and the cached GOP's audio frame; then the new frame.
  EXPECT_EQ(t2a.payloads(MediaType::Audio),
            (std::vector<Bytes>{vec(aac_seq_header()), vec(aac_raw()), vec(aac_raw())}));
  s.remove_subscriber(&t2a);
  s.remove_subscriber(&all);
  s.remove_subscriber(&t0);
  s.remove_subscriber(&t2);
}

TEST_F(StreamMultitrackTest, LatePlayersGetTheirTracksHeadersAndGop) {
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  publish_gop(s, 0);
  publish_gop(s, 80);  // a second GOP: the cache holds only it

  Player all, t1;
  all.set_track_selection(TrackSelection::all());
  t1.set_track_selection(TrackSelection::one(1));
  s.add_subscriber(&all);
  s.add_subscriber(&t1);
  EXPECT_EQ(t1.payloads(MediaType::Video),
            (std::vector<Bytes>{with_byte(avc_seq_header(), 1), with_byte(avc_keyframe(), 1),
                                with_byte(avc_inter(), 1)}));
  ASSERT_GE(t1.frames.size(), 2u);
  EXPECT_EQ(t1.frames[1]->timestamp, 80u);
  EXPECT_EQ(all.payloads(MediaType::Video),
            (std::vector<Bytes>{many_tracks(avc_seq_header(), true, 3), many_tracks(avc_keyframe(), true, 3),
                                many_tracks(avc_inter(), true, 3)}));
  EXPECT_EQ(all.payloads(MediaType::Audio), (std::vector<Bytes>{vec(aac_seq_header()), vec(aac_raw())}));
  s.remove_subscriber(&all);
  s.remove_subscriber(&t1);
}

TEST_F(StreamMultitrackTest, TrackStartsAtItsOwnKeyframe) {
  // OBS style: track 0 plain, track 1 in OneTrack tags whose keyframes come later than track 0's.
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  auto one_track = [](const BufferRef& single) {
    const protocol::SingleTrackParts p = protocol::single_track_parts(single.span(), true);
    protocol::MultitrackTag t;
    t.is_video = true;
    t.frame_type = p.frame_type;
    t.packet_type = p.packet_type;
    t.tracks = {{1, p.track.fourcc, p.track.body}};
    return bytes(protocol::write_multitrack_tag(t));
  };
  s.publish(MediaType::Video, 0, avc_seq_header());
  s.publish(MediaType::Video, 0, one_track(avc_seq_header()));
  s.publish(MediaType::Video, 0, avc_keyframe());
  s.publish(MediaType::Video, 0, one_track(avc_inter()));  // track 1 not at a keyframe yet
  s.publish(MediaType::Video, 40, avc_inter());
  s.publish(MediaType::Video, 40, one_track(avc_keyframe()));

  Player t1, t0;
  t1.set_track_selection(TrackSelection::one(1));
  t0.set_track_selection(TrackSelection::one(0));
  s.add_subscriber(&t1);
  s.add_subscriber(&t0);
  EXPECT_EQ(t1.payloads(MediaType::Video), (std::vector<Bytes>{vec(avc_seq_header()), vec(avc_keyframe())}));
  EXPECT_EQ(t0.payloads(MediaType::Video),
            (std::vector<Bytes>{vec(avc_seq_header()), vec(avc_keyframe()), vec(avc_inter())}));
  s.remove_subscriber(&t1);
  s.remove_subscriber(&t0);
}

TEST_F(StreamMultitrackTest, MalformedMultitrackIsDropped) {
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  Player all;
  s.add_subscriber(&all);
  s.publish(MediaType::Video, 0, bytes({0x96, 0x11, 'a', 'v', 'c', '1', 0x00, 0x00, 0x00, 0x09}));
  EXPECT_EQ(s.info().frames_dropped, 1u);
  EXPECT_TRUE(all.frames.empty());
  s.remove_subscriber(&all);
}

TEST(TrackSelection, ParsesQueryValues) {
  EXPECT_EQ(parse_track_selection("all"), TrackSelection::all());
  EXPECT_EQ(parse_track_selection("0"), TrackSelection::one(0));
  EXPECT_EQ(parse_track_selection("255"), TrackSelection::one(255));
  EXPECT_FALSE(parse_track_selection("256"));
  EXPECT_FALSE(parse_track_selection(""));
  EXPECT_FALSE(parse_track_selection("1x"));
  EXPECT_FALSE(parse_track_selection("-1"));
}

}  // namespace
}  // namespace rill::media
