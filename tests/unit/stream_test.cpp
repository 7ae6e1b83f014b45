// Stream / StreamRegistry / MediaFrame: classification, timeline, fan-out, lifetimes.
#include "rill/media/stream.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/ostream_sink.h>

#include <functional>
#include <memory>
#include <sstream>
#include <vector>

#include "media_test_util.h"
#include "rill/media/testing/fake_timer_queue.h"
#include "rill/protocol/chunk_reader.h"
#include "rill/protocol/flv_file.h"

namespace rill::media {
namespace {

using namespace testutil;
using namespace std::chrono_literals;

struct Recorder : Subscriber {
  std::vector<FramePtr> frames;
  int publishes = 0, unpublishes = 0, ends = 0;
  std::function<void(const FramePtr&)> on_frame_hook;
  std::function<void()> on_unpublish_hook, on_stream_end_hook;

  void on_frame(const FramePtr& f) override {
    frames.push_back(f);
    if (on_frame_hook) on_frame_hook(f);
  }
  void on_publish(Stream&) override { ++publishes; }
  void on_unpublish(Stream&) override {
    ++unpublishes;
    if (on_unpublish_hook) on_unpublish_hook();
  }
  void on_stream_end(Stream&) override {
    ++ends;
    if (on_stream_end_hook) on_stream_end_hook();
  }
  std::vector<uint32_t> timestamps() const {
    std::vector<uint32_t> v;
    for (auto& f : frames) v.push_back(f->timestamp);
    return v;
  }
};

class StreamTest : public ::testing::Test {
 protected:
  StreamTest() {
    log_sink_ = std::make_shared<spdlog::sinks::ostream_sink_st>(log_text_);
    auto logger = std::make_shared<spdlog::logger>("media_test", log_sink_);
    logger->set_level(spdlog::level::debug);
    registry_ = std::make_unique<StreamRegistry>(timers_, logger, default_outputs);
    cfg_.name = "live";
    cfg_.play_wait = 0ms;
    cfg_.publisher_idle_timeout = 10000ms;
  }
  Stream& stream() { return registry_->get_or_create(StreamKey{"live", "cam"}, cfg_); }
  Stream* find() { return registry_->find(StreamKey{"live", "cam"}); }
  void publish_headers(Stream& s, uint32_t ts = 0) {
    s.publish(MediaType::Data, ts, on_metadata(true));
    s.publish(MediaType::Video, ts, avc_seq_header());
    s.publish(MediaType::Audio, ts, aac_seq_header());
  }

  std::ostringstream log_text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_st> log_sink_;
  FakeTimerQueue timers_;
  config::AppConfig cfg_;
  std::unique_ptr<StreamRegistry> registry_;
  int pub_ = 0, pub2_ = 0;  // publisher owner tags
};

TEST_F(StreamTest, RegistryKeysByAppAndName) {
  Stream& a = registry_->get_or_create(StreamKey{"live", "cam"}, cfg_);
  Stream& b = registry_->get_or_create(StreamKey{"live", "cam"}, cfg_);
  Stream& c = registry_->get_or_create(StreamKey{"live2", "cam"}, cfg_);
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
  EXPECT_EQ(a.key_text(), "live/cam");
  EXPECT_EQ(a.key(), (StreamKey{"live", "cam"}));
  EXPECT_EQ(registry_->find(StreamKey{"live", "cam"}), &a);
  EXPECT_EQ(registry_->find(StreamKey{"live", "other"}), nullptr);
  EXPECT_EQ(registry_->size(), 2u);
  size_t n = 0;
  registry_->for_each([&](Stream&) { ++n; });
  EXPECT_EQ(n, 2u);
}

TEST_F(StreamTest, SecondPublisherIsRefused) {
  Stream& s = stream();
  EXPECT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  EXPECT_FALSE(s.attach_publisher(&pub2_, PublishOrigin::Ingest));  // NetStream.Publish.BadName
  EXPECT_TRUE(s.has_publisher());
  s.detach_publisher(&pub2_);  // not the owner: no effect
  EXPECT_TRUE(s.has_publisher());
  EXPECT_NE(log_text_.str().find("publish start: live/cam"), std::string::npos);
}

TEST_F(StreamTest, ClassifiesAndFansOut) {
  Stream& s = stream();
  Recorder r;
  s.add_subscriber(&r);
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  EXPECT_EQ(r.publishes, 1);  // was waiting before the publisher came
  publish_headers(s);
  s.publish(MediaType::Video, 0, avc_keyframe(5, 40));
  s.publish(MediaType::Video, 40, avc_inter());
  s.publish(MediaType::Audio, 23, aac_raw());
  ASSERT_EQ(r.frames.size(), 6u);
  EXPECT_TRUE(r.frames[0]->metadata);
  EXPECT_EQ(r.frames[0]->type, MediaType::Data);
  EXPECT_EQ(vec(r.frames[0]->payload), vec(on_metadata(false)));  // @setDataFrame stripped
  EXPECT_TRUE(r.frames[1]->sequence_header);
  EXPECT_TRUE(r.frames[1]->keyframe);
  EXPECT_TRUE(r.frames[2]->sequence_header);
  EXPECT_EQ(r.frames[2]->type, MediaType::Audio);
  EXPECT_TRUE(r.frames[3]->keyframe);
  EXPECT_FALSE(r.frames[3]->sequence_header);
  EXPECT_EQ(r.frames[3]->composition_time, 40);
  EXPECT_FALSE(r.frames[4]->keyframe);
  EXPECT_FALSE(r.frames[5]->sequence_header);

  const StreamInfo& info = s.info();
  EXPECT_TRUE(info.has_audio);
  EXPECT_TRUE(info.has_video);
  EXPECT_EQ(info.video_codec_id, 7);
  EXPECT_EQ(info.audio_format, 10);
  EXPECT_EQ(info.frames_in, 6u);
  EXPECT_EQ(info.frames_dropped, 0u);

  // Script data that is not metadata is ignored; metadata without @setDataFrame is kept as is.
  std::vector<uint8_t> other;
  protocol::Amf0Encoder(other).write_string("onCuePoint");
  s.publish(MediaType::Data, 50, bytes(other));
  EXPECT_EQ(r.frames.size(), 6u);
  BufferRef plain = on_metadata(false, 640);
  s.publish(MediaType::Data, 60, plain);
  ASSERT_EQ(r.frames.size(), 7u);
  EXPECT_EQ(r.frames[6]->payload.get(), plain.get());  // not copied
  EXPECT_EQ(s.gop_cache().metadata(), r.frames[6]);
  s.remove_subscriber(&r);
}

TEST_F(StreamTest, LateSubscriberGetsMetadataHeadersThenKeyframe) {
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  s.publish(MediaType::Video, 0, avc_inter());  // before any keyframe
  publish_headers(s, 0);
  s.publish(MediaType::Video, 0, avc_keyframe());
  s.publish(MediaType::Audio, 10, aac_raw());
  s.publish(MediaType::Video, 40, avc_inter());
  s.publish(MediaType::Video, 2000, avc_keyframe());
  s.publish(MediaType::Audio, 2010, aac_raw());
  s.publish(MediaType::Video, 2040, avc_inter());

  Recorder late;
  s.add_subscriber(&late);  // replayed synchronously
  ASSERT_EQ(late.frames.size(), 6u);
  EXPECT_TRUE(late.frames[0]->metadata);
  EXPECT_TRUE(late.frames[1]->sequence_header);
  EXPECT_EQ(late.frames[1]->type, MediaType::Video);
  EXPECT_TRUE(late.frames[2]->sequence_header);
  EXPECT_EQ(late.frames[2]->type, MediaType::Audio);
  EXPECT_TRUE(late.frames[3]->keyframe);
  EXPECT_FALSE(late.frames[3]->sequence_header);
  EXPECT_EQ(late.frames[3]->timestamp, 2000u);
  EXPECT_EQ(late.frames[4]->timestamp, 2010u);
  EXPECT_EQ(late.frames[5]->timestamp, 2040u);
  EXPECT_EQ(late.publishes, 0);  // the publisher was already there

  s.publish(MediaType::Audio, 2050, aac_raw());  // then live
  ASSERT_EQ(late.frames.size(), 7u);
  EXPECT_EQ(late.frames[6]->timestamp, 2050u);
  s.remove_subscriber(&late);
}

TEST_F(StreamTest, RepublishContinuesTimelineAndNotifies) {
  Stream& s = stream();
  Recorder r;
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  s.add_subscriber(&r);
  s.publish(MediaType::Video, 5000, avc_seq_header());  // first frame maps to 0
  s.publish(MediaType::Video, 5000, avc_keyframe());
  s.publish(MediaType::Audio, 5023, aac_raw());
  s.publish(MediaType::Video, 5040, avc_inter());
  s.publish(MediaType::Audio, 4990, aac_raw());  // before the session's first frame: clamped
  EXPECT_EQ(r.timestamps(), (std::vector<uint32_t>{0, 0, 23, 40, 0}));

  s.detach_publisher(&pub_);
  EXPECT_EQ(r.unpublishes, 1);
  EXPECT_FALSE(s.has_publisher());
  EXPECT_EQ(find(), &s);  // the subscriber waits for the publisher to come back
  EXPECT_NE(log_text_.str().find("publish stop: live/cam"), std::string::npos);

  timers_.advance(3000);
  ASSERT_TRUE(
      s.attach_publisher(&pub2_, PublishOrigin::Ingest));  // the encoder restarted: its clock starts over
  EXPECT_EQ(r.publishes, 1);
  EXPECT_FALSE(s.gop_cache().video_header());  // nothing stale is kept
  EXPECT_EQ(s.gop_cache().gop_frames(), 0u);
  s.publish(MediaType::Video, 0, avc_seq_header());
  s.publish(MediaType::Video, 0, avc_keyframe());
  s.publish(MediaType::Video, 40, avc_inter());
  EXPECT_EQ(r.timestamps(), (std::vector<uint32_t>{0, 0, 23, 40, 0, 41, 41, 81}));
  timers_.advance(60000);  // the idle timer was cancelled
  EXPECT_EQ(r.ends, 0);

  // Third session, across the 32-bit wrap of the publisher's clock: deltas are kept.
  s.detach_publisher(&pub2_);
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  EXPECT_EQ(r.unpublishes, 2);
  EXPECT_EQ(r.publishes, 2);
  s.publish(MediaType::Video, 0xFFFFFFF0u, avc_keyframe());
  s.publish(MediaType::Video, 0x00000010u, avc_inter());
  EXPECT_EQ(r.frames[r.frames.size() - 2]->timestamp, 82u);
  EXPECT_EQ(r.frames.back()->timestamp, 82u + 0x20);
  s.remove_subscriber(&r);
}

TEST_F(StreamTest, RenditionKeepsItsPublishersClockUnlessItWouldGoBack) {
  cfg_.hls.variant_suffixes = {"_hi", "_lo"};
  Stream& s = registry_->get_or_create(StreamKey{"live", "cam_lo"}, cfg_);
  Recorder r;
  s.add_subscriber(&r);
  // A transcoder copying its source's timestamps: headers at 0, media at the source's times.
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  publish_headers(s, 0);
  s.publish(MediaType::Video, 5000, avc_keyframe());
  s.publish(MediaType::Video, 5040, avc_inter());
  EXPECT_EQ(r.timestamps(), (std::vector<uint32_t>{0, 0, 0, 5000, 5040}));
  // Restarted, it joins its source later: its clock is ahead of the timeline, kept.
  s.detach_publisher(&pub_);
  ASSERT_TRUE(s.attach_publisher(&pub2_, PublishOrigin::Ingest));
  publish_headers(s, 0);
  s.publish(MediaType::Video, 9000, avc_keyframe());
  EXPECT_EQ(r.timestamps(), (std::vector<uint32_t>{0, 0, 0, 5000, 5040, 5040, 5040, 5040, 9000}));
  // An encoder whose clock starts over: continued after the timeline, as any stream.
  s.detach_publisher(&pub2_);
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  s.publish(MediaType::Video, 0, avc_keyframe());
  s.publish(MediaType::Video, 40, avc_inter());
  EXPECT_EQ(r.frames[r.frames.size() - 2]->timestamp, 9001u);
  EXPECT_EQ(r.frames.back()->timestamp, 9041u);
  // A stream of the app that is no rendition is rebased onto 0 as before.
  Stream& plain = stream();
  Recorder p;
  plain.add_subscriber(&p);
  ASSERT_TRUE(plain.attach_publisher(&pub2_, PublishOrigin::Ingest));
  plain.publish(MediaType::Video, 5000, avc_keyframe());
  EXPECT_EQ(p.frames.back()->timestamp, 0u);
  s.remove_subscriber(&r);
  plain.remove_subscriber(&p);
}

TEST_F(StreamTest, OutputTimelineWrapsModulo32Bits) {
  Stream& s = stream();
  Recorder r;
  s.add_subscriber(&r);
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  // A session longer than 2^31 ms (~25 days), stepping forward past the input's wrap twice.
  uint32_t in = 100;
  s.publish(MediaType::Video, in, avc_keyframe());
  for (int i = 0; i < 4; ++i) s.publish(MediaType::Video, in += 0x7FFFFFFCu, avc_inter());
  EXPECT_EQ(r.frames.back()->timestamp, 0xFFFFFFF0u);
  s.publish(MediaType::Video, in - 20, avc_inter());  // slightly behind: kept, not clamped
  EXPECT_EQ(r.frames.back()->timestamp, 0xFFFFFFF0u - 20);
  s.detach_publisher(&pub_);
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  s.publish(MediaType::Video, 7, avc_keyframe());
  EXPECT_EQ(r.frames.back()->timestamp, 0xFFFFFFF1u);
  s.publish(MediaType::Video, 47, avc_inter());
  EXPECT_EQ(r.frames.back()->timestamp, 0x00000019u);  // wrapped, still forward
  s.remove_subscriber(&r);
}

TEST_F(StreamTest, IdleTimeoutEndsStreamAndReleasesIt) {
  Stream& s = stream();
  Recorder a, b;
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  s.add_subscriber(&a);
  s.add_subscriber(&b);
  s.publish(MediaType::Video, 0, avc_keyframe());
  s.detach_publisher(&pub_);
  EXPECT_EQ(a.unpublishes, 1);
  EXPECT_EQ(b.unpublishes, 1);
  timers_.advance(9999);
  EXPECT_EQ(a.ends, 0);
  ASSERT_EQ(find(), &s);
  timers_.advance(1);
  EXPECT_EQ(a.ends, 1);
  EXPECT_EQ(b.ends, 1);
  EXPECT_EQ(find(), nullptr);  // released
  EXPECT_EQ(registry_->size(), 0u);
  EXPECT_EQ(timers_.pending(), 0u);
}

TEST_F(StreamTest, LastSubscriberLeavingDuringIdleWaitReleases) {
  Stream& s = stream();
  Recorder a;
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  s.add_subscriber(&a);
  s.detach_publisher(&pub_);
  ASSERT_EQ(find(), &s);
  s.remove_subscriber(&a);  // nobody is left to wait for the publisher
  EXPECT_EQ(find(), nullptr);
  EXPECT_EQ(timers_.pending(), 0u);
}

TEST_F(StreamTest, PublisherLeavingAnEmptyStreamReleasesIt) {
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  s.publish(MediaType::Video, 0, avc_keyframe());
  s.detach_publisher(&pub_);
  EXPECT_EQ(find(), nullptr);
  EXPECT_EQ(timers_.pending(), 0u);
}

TEST_F(StreamTest, SubscriberLeavingInOnUnpublish) {
  Stream& s = stream();
  Recorder a, b;
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  s.add_subscriber(&a);
  s.add_subscriber(&b);
  a.on_unpublish_hook = [&] { s.remove_subscriber(&a); };
  b.on_unpublish_hook = [&] { s.remove_subscriber(&b); };
  s.detach_publisher(&pub_);
  EXPECT_EQ(a.unpublishes, 1);
  EXPECT_EQ(b.unpublishes, 1);
  timers_.run_due();
  EXPECT_EQ(find(), nullptr);
  EXPECT_EQ(timers_.pending(), 0u);
}

TEST_F(StreamTest, PlayWaitEndsWaitingSubscribers) {
  cfg_.play_wait = 5000ms;
  Stream& s = stream();
  Recorder a, b;
  s.add_subscriber(&a);
  timers_.advance(2000);
  s.add_subscriber(&b);
  EXPECT_EQ(s.subscriber_count(), 2u);
  timers_.advance(3000);
  EXPECT_EQ(a.ends, 1);  // its own deadline
  EXPECT_EQ(b.ends, 0);
  EXPECT_EQ(s.subscriber_count(), 1u);
  timers_.advance(2000);
  EXPECT_EQ(b.ends, 1);
  EXPECT_EQ(find(), nullptr);
  EXPECT_EQ(timers_.pending(), 0u);
}

TEST_F(StreamTest, PlayWaitSatisfiedByPublisher) {
  cfg_.play_wait = 5000ms;
  Stream& s = stream();
  Recorder a;
  s.add_subscriber(&a);
  timers_.advance(1000);
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  EXPECT_EQ(a.publishes, 1);
  EXPECT_EQ(timers_.pending(), 0u);
  timers_.advance(10000);
  EXPECT_EQ(a.ends, 0);
  s.publish(MediaType::Video, 0, avc_keyframe());
  EXPECT_EQ(a.frames.size(), 1u);
  s.remove_subscriber(&a);
}

TEST_F(StreamTest, PlayWaitZeroLeavesTheDecisionToTheCaller) {
  Stream& s = stream();
  Recorder a;
  s.add_subscriber(&a);
  EXPECT_FALSE(s.has_publisher());  // the caller answers StreamNotFound ...
  EXPECT_EQ(timers_.pending(), 0u);
  timers_.advance(100000);
  EXPECT_EQ(a.ends, 0);
  EXPECT_EQ(find(), &s);
  s.remove_subscriber(&a);  // ... and removes it
  EXPECT_EQ(find(), nullptr);
}

TEST_F(StreamTest, SubscriberRemovingItselfOrOthersDuringOnFrame) {
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  Recorder a, b, c, d;
  s.add_subscriber(&a);
  s.add_subscriber(&b);
  s.add_subscriber(&c);
  s.add_subscriber(&d);
  b.on_frame_hook = [&](const FramePtr&) {
    s.remove_subscriber(&b);
    s.remove_subscriber(&c);  // later in the list: must not be called
    s.remove_subscriber(&a);  // earlier: already called
  };
  Recorder e;
  bool e_added = false;
  d.on_frame_hook = [&](const FramePtr&) {
    if (e_added) return;
    e_added = true;
    s.add_subscriber(&e);  // joins during dispatch: replayed once, not called again for this frame
  };
  s.publish(MediaType::Video, 0, avc_keyframe());
  EXPECT_EQ(a.frames.size(), 1u);
  EXPECT_EQ(b.frames.size(), 1u);
  EXPECT_EQ(c.frames.size(), 0u);
  EXPECT_EQ(d.frames.size(), 1u);
  EXPECT_EQ(e.frames.size(), 1u);
  EXPECT_EQ(s.subscriber_count(), 2u);
  s.publish(MediaType::Video, 40, avc_inter());
  EXPECT_EQ(a.frames.size(), 1u);
  EXPECT_EQ(b.frames.size(), 1u);
  EXPECT_EQ(d.frames.size(), 2u);
  EXPECT_EQ(e.frames.size(), 2u);
  s.remove_subscriber(&d);
  s.remove_subscriber(&e);
  s.remove_subscriber(&e);  // twice: no-op
}

TEST_F(StreamTest, SubscriberLeavingDuringReplayDefersRelease) {
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  publish_headers(s);
  s.publish(MediaType::Video, 0, avc_keyframe());
  s.detach_publisher(&pub_);  // no subscribers: released at once
  ASSERT_EQ(find(), nullptr);

  Stream& t = stream();
  ASSERT_TRUE(t.attach_publisher(&pub_, PublishOrigin::Ingest));
  publish_headers(t);
  t.publish(MediaType::Video, 0, avc_keyframe());
  Recorder keep;
  t.add_subscriber(&keep);
  t.detach_publisher(&pub_);  // keep waits: idle timer
  Recorder quitter;
  quitter.on_frame_hook = [&](const FramePtr&) { t.remove_subscriber(&quitter); };
  t.add_subscriber(&quitter);            // e.g. its queue overflowed on the replay
  EXPECT_EQ(quitter.frames.size(), 1u);  // no more frames once it left
  EXPECT_EQ(t.subscriber_count(), 1u);

  // Now one that takes the last other subscriber with it: the stream is empty, but the caller of
  // add_subscriber may still look at it, so the release waits for the event loop.
  Recorder wrecker;
  wrecker.on_frame_hook = [&](const FramePtr&) {
    t.remove_subscriber(&keep);
    t.remove_subscriber(&wrecker);
  };
  t.add_subscriber(&wrecker);
  EXPECT_EQ(wrecker.frames.size(), 1u);
  ASSERT_EQ(find(), &t);
  EXPECT_EQ(t.subscriber_count(), 0u);
  EXPECT_FALSE(t.has_publisher());
  EXPECT_EQ(timers_.pending(), 1u);  // the deferred release (the idle wait was cancelled)
  timers_.run_due();
  EXPECT_EQ(find(), nullptr);
  EXPECT_EQ(timers_.pending(), 0u);
}

TEST_F(StreamTest, ReleaseFromInsideDispatchIsDeferred) {
  Stream& s = stream();
  Recorder a;
  s.add_subscriber(&a);
  a.on_frame_hook = nullptr;
  // With no publisher, a subscriber leaving from inside a callback must not free the stream
  // under the dispatch loop.
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  a.on_unpublish_hook = [&] { s.remove_subscriber(&a); };
  s.detach_publisher(&pub_);
  EXPECT_EQ(find(), nullptr);  // released at the end of detach_publisher
  EXPECT_EQ(timers_.pending(), 0u);

  Stream& t = stream();
  Recorder b;
  bool removed = false;
  b.on_frame_hook = [&](const FramePtr&) {
    if (removed) return;
    removed = true;
    t.remove_subscriber(&b);
  };
  ASSERT_TRUE(t.attach_publisher(&pub_, PublishOrigin::Ingest));
  t.publish(MediaType::Video, 0, avc_keyframe());
  t.add_subscriber(&b);   // replay: b leaves inside on_frame, while no ...
  EXPECT_EQ(find(), &t);  // publisher is attached: stays
  t.detach_publisher(&pub_);
  EXPECT_EQ(find(), nullptr);
}

TEST_F(StreamTest, MalformedBodiesAreDroppedAndCounted) {
  Stream& s = stream();
  Recorder r;
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  s.add_subscriber(&r);
  s.publish(MediaType::Video, 0, bytes({0x17}));  // AVC tag cut after the first byte
  s.publish(MediaType::Video, 0, BufferRef());    // empty
  s.publish(MediaType::Audio, 0, BufferRef());
  EXPECT_TRUE(r.frames.empty());
  EXPECT_EQ(s.info().frames_dropped, 3u);
  EXPECT_EQ(s.gop_cache().gop_frames(), 0u);
  EXPECT_NE(log_text_.str().find("malformed video"), std::string::npos);
  s.publish(MediaType::Video, 0, avc_keyframe());  // the stream goes on
  EXPECT_EQ(r.frames.size(), 1u);
  EXPECT_EQ(r.frames[0]->timestamp, 0u);
  s.remove_subscriber(&r);
}

TEST_F(StreamTest, ThousandSubscribersShareOneSerialization) {
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  struct Player : Subscriber {
    BufferRef last;
    void on_frame(const FramePtr& f) override { last = f->rtmp_chunks(4096); }
  };
  std::vector<Player> players(1000);
  for (auto& p : players) s.add_subscriber(&p);
  s.publish(MediaType::Video, 0, avc_keyframe(20000));
  SharedBuffer* first = players[0].last.get();
  ASSERT_NE(first, nullptr);
  for (auto& p : players) ASSERT_EQ(p.last.get(), first);
  // 1000 players + the frame's own cache (the frame lives on in the GOP cache).
  EXPECT_EQ(first->use_count(), 1001u);
  for (auto& p : players) s.remove_subscriber(&p);
  s.detach_publisher(&pub_);
  EXPECT_EQ(find(), nullptr);
}

TEST_F(StreamTest, DisabledGopCacheStillReplaysHeaders) {
  cfg_.gop_cache = false;
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  publish_headers(s);
  s.publish(MediaType::Video, 0, avc_keyframe());
  Recorder r;
  s.add_subscriber(&r);
  ASSERT_EQ(r.frames.size(), 3u);
  EXPECT_TRUE(r.frames[0]->metadata);
  EXPECT_TRUE(r.frames[1]->sequence_header);
  EXPECT_TRUE(r.frames[2]->sequence_header);
  s.remove_subscriber(&r);
}

TEST_F(StreamTest, RegistryDestructionCancelsTimers) {
  cfg_.play_wait = 5000ms;
  Recorder a;
  stream().add_subscriber(&a);
  Recorder b;
  Stream& s2 = registry_->get_or_create(StreamKey{"live", "other"}, cfg_);
  ASSERT_TRUE(s2.attach_publisher(&pub_, PublishOrigin::Ingest));
  s2.add_subscriber(&b);
  s2.detach_publisher(&pub_);
  EXPECT_EQ(timers_.pending(), 2u);
  registry_.reset();
  EXPECT_EQ(timers_.pending(), 0u);
  timers_.advance(100000);
  EXPECT_EQ(a.ends + b.ends, 0);
}

// ---------------------------------------------------------------------------------------------
// MediaFrame serializations

TEST(MediaFrame, RtmpChunksAreCachedPerChunkSize) {
  MediaFrame f;
  f.type = MediaType::Video;
  f.timestamp = 1234;
  f.keyframe = true;
  f.payload = avc_keyframe(300);

  const BufferRef& a = f.rtmp_chunks(128);
  SharedBuffer* ap = a.get();
  EXPECT_EQ(f.rtmp_chunks(128).get(), ap);  // cached
  // Chunks parse back to the message, on csid 6, message stream 1.
  std::vector<protocol::RtmpMessage> got;
  protocol::ChunkReader reader([&](protocol::RtmpMessage&& m) { got.push_back(std::move(m)); });
  reader.feed(a.span());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].type_id, 9);
  EXPECT_EQ(got[0].csid, kRtmpCsidVideo);
  EXPECT_EQ(got[0].stream_id, kRtmpPlayStreamId);
  EXPECT_EQ(got[0].timestamp, 1234u);
  EXPECT_EQ(vec(got[0].payload), vec(f.payload));
  EXPECT_EQ(a.data()[0], 0x06);         // fmt 0, csid 6
  EXPECT_EQ(a.data()[12 + 128], 0xC6);  // fmt 3 continuation after the first 128 bytes

  const BufferRef& b = f.rtmp_chunks(4096);
  EXPECT_LT(b.size(), f.rtmp_chunks(128).size() + 1);  // recomputed for the new size
  EXPECT_EQ(f.rtmp_chunks(4096).get(), f.rtmp_chunks(4096).get());

  MediaFrame audio;
  audio.type = MediaType::Audio;
  audio.payload = aac_raw();
  EXPECT_EQ(audio.rtmp_chunks(4096).data()[0], 0x04);
  MediaFrame data;
  data.type = MediaType::Data;
  data.metadata = true;
  data.payload = on_metadata(false);
  EXPECT_EQ(data.rtmp_chunks(4096).data()[0], 0x05);
}

TEST(MediaFrame, FlvTagIsSerializedOnce) {
  MediaFrame f;
  f.type = MediaType::Audio;
  f.timestamp = 0x01020304;
  f.payload = aac_raw(10);  // 12-byte body: tag = 11 + 12 + 4 = 27

  const BufferRef& tag = f.flv_tag();
  EXPECT_EQ(f.flv_tag().get(), tag.get());  // cached: every player shares one buffer
  EXPECT_EQ(vec(tag), vec(protocol::serialize_flv_tag(8, 0x01020304, f.payload.span())));
  ASSERT_EQ(tag.size(), 27u);
}

TEST(MediaFrame, FlvChunkIsTheTagFramedAsOneHttpChunkSerializedOnce) {
  MediaFrame f;
  f.type = MediaType::Audio;
  f.timestamp = 0x01020304;
  f.payload = aac_raw(10);  // 27-byte tag = chunk size 0x1b

  const BufferRef& chunk = f.flv_chunk();
  EXPECT_EQ(f.flv_chunk().get(), chunk.get());  // cached: every chunked player shares one buffer
  const auto tag = vec(protocol::serialize_flv_tag(8, 0x01020304, f.payload.span()));
  std::vector<uint8_t> want = {'1', 'b', '\r', '\n'};
  want.insert(want.end(), tag.begin(), tag.end());
  want.push_back('\r');
  want.push_back('\n');
  EXPECT_EQ(vec(chunk), want);
  EXPECT_EQ(chunk->capacity(), chunk.size()) << "one allocation of the exact size";
}

}  // namespace
}  // namespace rill::media
