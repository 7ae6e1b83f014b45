// StreamOutput / OutputFactory: a stream's outputs are built per publisher from the app's
// configuration and the publisher's origin, get start, every frame and stop in order, and are
// destroyed on unpublish; the default factory's HLS output end to end through a Stream.
#include "rill/media/stream_output.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <memory>
#include <string>
#include <vector>

#include "media_test_util.h"
#include "rill/media/hls_store.h"
#include "rill/media/stream.h"
#include "rill/media/testing/fake_timer_queue.h"

namespace rill::media {
namespace {

using namespace testutil;
using namespace std::chrono_literals;

// Writes what happens to it into a shared event log.
class TestOutput : public StreamOutput {
 public:
  TestOutput(std::vector<std::string>& events, int id) : events_(events), id_(id) { add("built"); }
  ~TestOutput() override { add("destroyed"); }
  std::string_view name() const override { return "test"; }
  void on_start(const PublishSession& p) override {
    add("start " + p.stream.key_text() + " " + std::string(to_string(p.origin)));
  }
  void on_frame(const FramePtr& f) override {
    std::string what = f->metadata ? "meta" : f->type == MediaType::Video ? "video" : "audio";
    if (f->sequence_header) what += " header";
    add(what + " @" + std::to_string(f->timestamp));
  }
  void on_stop(const PublishSession& p) override {
    add("stop " + std::to_string(p.stream.info().frames_in) + " frames");
  }

 private:
  void add(const std::string& e) { events_.push_back("#" + std::to_string(id_) + " " + e); }
  std::vector<std::string>& events_;
  int id_;
};

struct Recorder : Subscriber {
  std::vector<std::string>* events = nullptr;
  void on_frame(const FramePtr& f) override {
    events->push_back("subscriber @" + std::to_string(f->timestamp));
  }
};

class StreamOutputTest : public ::testing::Test {
 protected:
  StreamOutputTest() {
    cfg_.name = "live";
    cfg_.play_wait = 0ms;
    cfg_.publisher_idle_timeout = 10000ms;
    cfg_.hls.enabled = true;
    cfg_.hls.fragment = 2000ms;
    cfg_.hls.window = 5;
  }
  // A registry whose factory builds one TestOutput per publisher (and records what it was asked).
  void use_test_factory() {
    make_registry([this](Stream& s, const config::AppConfig& app, PublishOrigin origin) {
      EXPECT_EQ(&app, &s.app_config());
      origins_.push_back(origin);
      StreamOutputs out;
      out.push_back(std::make_unique<TestOutput>(events_, ++built_));
      return out;
    });
  }
  void make_registry(OutputFactory f) {
    registry_ =
        std::make_unique<StreamRegistry>(timers_, std::make_shared<spdlog::logger>("t", sink_), std::move(f));
  }
  Stream& stream() { return registry_->get_or_create(StreamKey{"live", "cam"}, cfg_); }
  void publish_headers(Stream& s, uint32_t ts = 0) {
    s.publish(MediaType::Data, ts, on_metadata(true));
    s.publish(MediaType::Video, ts, avc_seq_header());
    s.publish(MediaType::Audio, ts, aac_seq_header());
  }
  // 25 fps video with a keyframe every 2 s and AAC every 23 ms over [from, to) ms; the fake clock
  // follows the media (a real-time publisher).
  void av(Stream& s, uint32_t from, uint32_t to) {
    uint32_t v = from, a = from;
    while (v < to || a < to) {
      const uint32_t ts = v <= a ? v : a;
      if (ts > timers_.now_ms()) timers_.advance(ts - timers_.now_ms());
      if (v <= a) {
        s.publish(MediaType::Video, v, (v - from) % 2000 == 0 ? avc_keyframe(800) : avc_inter(200));
        v += 40;
      } else {
        s.publish(MediaType::Audio, a, aac_raw(100));
        a += 23;
      }
    }
  }

  std::shared_ptr<spdlog::sinks::null_sink_st> sink_ = std::make_shared<spdlog::sinks::null_sink_st>();
  FakeTimerQueue timers_;
  config::AppConfig cfg_;
  std::vector<std::string> events_;  // outlives the registry: its outputs write here to the end
  std::vector<PublishOrigin> origins_;
  std::unique_ptr<StreamRegistry> registry_;
  int built_ = 0;
  int pub_ = 0, pub2_ = 0;
};

TEST_F(StreamOutputTest, OutputGetsStartFramesAndStopInOrder) {
  use_test_factory();
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  ASSERT_EQ(s.outputs().size(), 1u);
  EXPECT_EQ(s.outputs()[0]->name(), "test");
  publish_headers(s, 0);
  s.publish(MediaType::Video, 0, avc_keyframe());
  s.publish(MediaType::Video, 40, bytes({0x17}));  // malformed: dropped before the outputs
  s.publish(MediaType::Audio, 23, aac_raw());
  s.detach_publisher(&pub_);  // nobody left: the stream is gone too (do not touch s)
  EXPECT_EQ(registry_->find(StreamKey{"live", "cam"}), nullptr);
  const std::vector<std::string> want = {"#1 built",           "#1 start live/cam ingest", "#1 meta @0",
                                         "#1 video header @0", "#1 audio header @0",       "#1 video @0",
                                         "#1 audio @23",       "#1 stop 6 frames",         "#1 destroyed"};
  EXPECT_EQ(events_, want);
  EXPECT_EQ(origins_, std::vector<PublishOrigin>{PublishOrigin::Ingest});
}

TEST_F(StreamOutputTest, OutputsGetEachFrameBeforeSubscribers) {
  use_test_factory();
  Stream& s = stream();
  Recorder r;
  r.events = &events_;
  s.add_subscriber(&r);
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  events_.clear();
  s.publish(MediaType::Audio, 5, aac_seq_header());
  s.publish(MediaType::Audio, 28, aac_raw());
  const std::vector<std::string> want = {"#1 audio header @0", "subscriber @0", "#1 audio @23",
                                         "subscriber @23"};
  EXPECT_EQ(events_, want);
  s.remove_subscriber(&r);
}

TEST_F(StreamOutputTest, OutputsAreRebuiltOnRepublishAndDestroyedOnUnpublish) {
  use_test_factory();
  Stream& s = stream();
  Recorder r;  // keeps the stream alive between the publishers
  r.events = &events_;
  s.add_subscriber(&r);
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  EXPECT_FALSE(s.attach_publisher(&pub2_, PublishOrigin::Ingest));  // refused: nothing built
  EXPECT_EQ(built_, 1);
  s.publish(MediaType::Audio, 0, aac_seq_header());
  s.detach_publisher(&pub_);
  ASSERT_GE(events_.size(), 2u);
  EXPECT_EQ(events_.back(), "#1 destroyed");
  EXPECT_TRUE(s.outputs().empty());

  events_.clear();
  ASSERT_TRUE(s.attach_publisher(&pub2_, PublishOrigin::WorkerLink));
  EXPECT_EQ(built_, 2);
  s.publish(MediaType::Audio, 0, aac_seq_header());
  s.detach_publisher(&pub2_);
  const std::vector<std::string> want = {"#2 built",           "#2 start live/cam worker link",
                                         "#2 audio header @1", "subscriber @1",
                                         "#2 stop 2 frames",   "#2 destroyed"};
  EXPECT_EQ(events_, want);  // the timeline (and the stream's frame count) continues: @1, 2 frames
  EXPECT_EQ(origins_, (std::vector<PublishOrigin>{PublishOrigin::Ingest, PublishOrigin::WorkerLink}));
  s.remove_subscriber(&r);
}

TEST_F(StreamOutputTest, RegistryDestroyedWhilePublishingStopsOutputs) {
  use_test_factory();
  ASSERT_TRUE(stream().attach_publisher(&pub_, PublishOrigin::Ingest));
  registry_.reset();
  ASSERT_GE(events_.size(), 2u);
  EXPECT_EQ(events_[events_.size() - 2], "#1 stop 0 frames");
  EXPECT_EQ(events_.back(), "#1 destroyed");
}

TEST_F(StreamOutputTest, EmptyFactoryBuildsNothing) {
  make_registry(OutputFactory{});
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::Ingest));
  EXPECT_TRUE(s.outputs().empty());
  publish_headers(s);
  EXPECT_EQ(registry_->hls().size(), 0u);
}

TEST_F(StreamOutputTest, DefaultOutputsGiveHlsToIngestOnly) {
  make_registry(default_outputs);
  Stream& s = stream();
  ASSERT_TRUE(s.attach_publisher(&pub_, PublishOrigin::WorkerLink));
  EXPECT_TRUE(s.outputs().empty());  // the owning worker segments; a worker-link copy does not
  EXPECT_EQ(registry_->hls().find(s.key()), nullptr);
  s.detach_publisher(&pub_);

  Stream& s2 = stream();
  ASSERT_TRUE(s2.attach_publisher(&pub_, PublishOrigin::Ingest));
  ASSERT_EQ(s2.outputs().size(), 1u);
  EXPECT_EQ(s2.outputs()[0]->name(), "hls");
  EXPECT_NE(registry_->hls().find(s2.key()), nullptr);
  s2.detach_publisher(&pub_);

  cfg_.hls.enabled = false;
  Stream& s3 = registry_->get_or_create(StreamKey{"live", "other"}, cfg_);
  ASSERT_TRUE(s3.attach_publisher(&pub_, PublishOrigin::Ingest));
  EXPECT_TRUE(s3.outputs().empty());
  s3.detach_publisher(&pub_);
}

TEST_F(StreamOutputTest, HlsThroughStreamEndsAndResumesThePlaylist) {
  make_registry(default_outputs);
  const StreamKey key{"live", "cam"};
  ASSERT_TRUE(stream().attach_publisher(&pub_, PublishOrigin::Ingest));
  publish_headers(stream());
  av(stream(), 0, 8040);
  const HlsStreamState* st = registry_->hls().find(key);
  ASSERT_NE(st, nullptr);
  EXPECT_TRUE(st->live());
  EXPECT_EQ(st->playlist().state().segments.size(), 4u);  // up to 8 s (8-8.04 in progress)
  stream().detach_publisher(&pub_);                       // the stream goes; the playlist ends and is kept
  EXPECT_EQ(registry_->find(key), nullptr);
  st = registry_->hls().find(key);
  ASSERT_NE(st, nullptr);
  EXPECT_FALSE(st->live());
  EXPECT_TRUE(st->playlist().ended());
  const uint64_t next = st->playlist().next_sequence();
  EXPECT_EQ(next, 5u);  // the segment in progress became the last one

  timers_.advance(1000);  // back within the grace: the media sequence continues
  ASSERT_TRUE(stream().attach_publisher(&pub2_, PublishOrigin::Ingest));
  EXPECT_FALSE(st->playlist().ended());
  publish_headers(stream(), 0);
  av(stream(), 0, 4040);
  ASSERT_FALSE(st->playlist().state().segments.empty());
  const auto& last = st->playlist().state().segments;
  bool marked = false;
  for (const auto& e : last) {
    if (e.sequence == next) marked = e.discontinuity;
  }
  EXPECT_TRUE(marked);
  stream().detach_publisher(&pub2_);
}

}  // namespace
}  // namespace rill::media
