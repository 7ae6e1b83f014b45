// The HLS responder (media/hls_responder.h): what every worker answers to an HLS request —
// status, body, cache policy, Retry-After — or the position it waits for first.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <memory>
#include <string>

#include "rill/media/hls_responder.h"
#include "rill/media/testing/fake_timer_queue.h"

namespace rill::media {
namespace {

using namespace std::chrono_literals;
using protocol::HlsCachePolicy;
using protocol::HlsObjectName;
using protocol::HlsSegmentForm;

HlsObjectName playlist(std::string directives = {}) {
  HlsObjectName o;
  o.directives = std::move(directives);
  return o;
}
HlsObjectName file(HlsSegmentForm form, uint64_t n) { return HlsObjectName{false, n, form}; }

std::string text(const BufferRef& b) { return b ? std::string(b->view()) : std::string(); }

class HlsResponderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = std::make_shared<spdlog::logger>("responder", std::make_shared<spdlog::sinks::null_sink_st>());
    store_ = std::make_unique<HlsStore>(timers_, *log_);
  }
  // An MPEG-TS stream of `segments` segments of `seconds` each.
  const HlsStreamState* ts(int segments, double seconds, std::chrono::milliseconds fragment = 1000ms) {
    config::HlsConfig cfg;
    cfg.enabled = true;
    cfg.fragment = fragment;
    cfg.window = 3;
    store_->open(key_, cfg);
    for (int i = 0; i < segments; ++i) add_segment(seconds);
    return store_->find(key_);
  }
  // A low-latency stream: `segments` whole segments of 1 s (5 parts each), then `parts` parts
  // of the open one.
  const HlsStreamState* ll(int segments, int parts) {
    config::HlsConfig cfg;
    cfg.enabled = true;
    cfg.fragment = 1000ms;
    cfg.window = 3;
    cfg.low_latency = true;
    cfg.part = 200ms;
    cfg.container = config::HlsContainer::Fmp4;
    store_->open(key_, cfg);
    store_->set_init(key_, SharedBuffer::copy_of(std::string_view("init")));
    for (int s = 0; s < segments; ++s) {
      for (int p = 0; p < 5; ++p) add_part();
      add_segment(1.0);
    }
    for (int p = 0; p < parts; ++p) add_part();
    return store_->find(key_);
  }
  void add_part() { store_->add_part(key_, SharedBuffer::copy_of(std::string_view("part")), 0.2, true); }
  void add_segment(double s) {
    store_->add_segment(key_, SharedBuffer::copy_of(std::string_view("seg")), s, false);
  }

  HlsAnswer answer(const HlsStreamState* st, const HlsObjectName& o) {
    HlsResponse r = respond_hls(st, key_, o);
    EXPECT_TRUE(std::holds_alternative<HlsAnswer>(r)) << protocol::format_hls_object(o);
    return std::holds_alternative<HlsAnswer>(r) ? std::get<HlsAnswer>(r) : HlsAnswer{};
  }
  HlsHold hold(const HlsStreamState* st, const HlsObjectName& o) {
    HlsResponse r = respond_hls(st, key_, o);
    EXPECT_TRUE(std::holds_alternative<HlsHold>(r)) << protocol::format_hls_object(o);
    return std::holds_alternative<HlsHold>(r) ? std::get<HlsHold>(r) : HlsHold{};
  }

  FakeTimerQueue timers_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<HlsStore> store_;
  StreamKey key_{"live", "cam"};
};

TEST_F(HlsResponderTest, NoStateOrNoSegmentYetIs404) {
  HlsAnswer a = answer(nullptr, playlist());
  EXPECT_EQ(a.head.status, 404);
  EXPECT_EQ(a.reason, "stream live/cam has no HLS playlist");
  EXPECT_EQ(a.head.cache, HlsCachePolicy::no_cache());
  EXPECT_EQ(answer(nullptr, file(HlsSegmentForm::Ts, 0)).head.status, 404);
  a = answer(ts(0, 1.0), playlist());
  EXPECT_EQ(a.head.status, 404);
  EXPECT_EQ(a.reason, "stream live/cam has no HLS segment yet");
}

TEST_F(HlsResponderTest, LivePlaylistIsCacheableForHalfATargetDuration) {
  const HlsStreamState* st = ts(3, 2.0, 2000ms);
  HlsAnswer a = answer(st, playlist());
  EXPECT_EQ(a.head.status, 200);
  EXPECT_EQ(a.head.cache, HlsCachePolicy::max_age(1));
  EXPECT_EQ(a.head.retry_after_s, 0);
  EXPECT_EQ(a.body.get(), st->playlist_text().get());  // the shared text, not a copy
  // Directives on a stream that is not low-latency change nothing.
  EXPECT_EQ(answer(st, playlist("_HLS_msn=99")).head, a.head);
  add_segment(4.0);  // target duration 4
  EXPECT_EQ(answer(st, playlist()).head.cache, HlsCachePolicy::max_age(2));
  // The publisher left: the ended playlist keeps its rule.
  store_->close(key_);
  a = answer(store_->find(key_), playlist());
  EXPECT_NE(text(a.body).find("#EXT-X-ENDLIST"), std::string::npos);
  EXPECT_EQ(a.head.cache, HlsCachePolicy::max_age(2));
}

// The target duration a live playlist's Cache-Control comes from is kept with the playlist's
// text: every change of the playlist (a segment added, the window sliding, the end) renews it.
TEST_F(HlsResponderTest, KeptTargetDurationFollowsThePlaylist) {
  const HlsStreamState* st = ts(3, 2.0, 2000ms);
  const auto computed = [&] { return protocol::hls_target_duration(st->playlist().state()); };
  EXPECT_EQ(st->target_duration(), 2u);
  EXPECT_EQ(answer(st, playlist()).head.cache, HlsCachePolicy::max_age(1));
  add_segment(6.0);
  EXPECT_EQ(st->target_duration(), 6u);
  EXPECT_EQ(st->target_duration(), computed());
  EXPECT_EQ(answer(st, playlist()).head.cache, HlsCachePolicy::max_age(3));
  for (int i = 0; i < 4; ++i) {  // the long segment leaves the window (3)
    add_segment(2.0);
    EXPECT_EQ(st->target_duration(), computed()) << i;
    EXPECT_EQ(answer(st, playlist()).head.cache, HlsCachePolicy::max_age(computed() / 2)) << i;
  }
  store_->close(key_);
  st = store_->find(key_);
  EXPECT_EQ(st->target_duration(), computed());
}

TEST_F(HlsResponderTest, ShortTargetDurationIsNotCached) {
  EXPECT_EQ(answer(ts(2, 1.0), playlist()).head.cache, HlsCachePolicy::no_cache());
}

TEST_F(HlsResponderTest, SegmentsAreImmutableForTheirMaxAge) {
  const HlsStreamState* st = ts(2, 1.0);
  HlsAnswer a = answer(st, file(HlsSegmentForm::Ts, 1));
  EXPECT_EQ(a.head.status, 200);
  EXPECT_EQ(a.head.cache, HlsCachePolicy::immutable(st->segment_max_age_s()));
  EXPECT_EQ(text(a.body), "seg");
  for (const HlsObjectName& o : {file(HlsSegmentForm::Ts, 2), file(HlsSegmentForm::Fmp4, 1),
                                 file(HlsSegmentForm::Init, 1), file(HlsSegmentForm::Part, 0)}) {
    a = answer(st, o);
    EXPECT_EQ(a.head.status, 404) << protocol::format_hls_object(o);
    EXPECT_NE(a.reason.find(" of live/cam is not available"), std::string::npos) << a.reason;
  }
}

TEST_F(HlsResponderTest, LowLatencyPlaylistAndDeltaUpdate) {
  const HlsStreamState* st = ll(4, 2);
  HlsAnswer a = answer(st, playlist());
  EXPECT_EQ(a.head.status, 200);
  EXPECT_EQ(a.head.cache, HlsCachePolicy::no_cache());  // changes with every part
  EXPECT_EQ(text(a.body), text(st->playlist_text()));
  a = answer(st, playlist("_HLS_skip=YES"));
  EXPECT_EQ(text(a.body), st->playlist_text_skipping());
  EXPECT_EQ(a.head.cache, HlsCachePolicy::no_cache());
}

TEST_F(HlsResponderTest, BlockingReloadReadyTooFarOrHeld) {
  const HlsStreamState* st = ll(4, 2);  // segments 0-3, parts 0 and 1 of segment 4
  const uint32_t target = st->playlist().state().target_duration;
  HlsAnswer a = answer(st, playlist("_HLS_msn=4&_HLS_part=1"));
  EXPECT_EQ(a.head.status, 200);
  EXPECT_EQ(a.head.cache, HlsCachePolicy::max_age(target));  // the URL names what it waited for
  a = answer(st, playlist("_HLS_msn=3&_HLS_skip=YES"));
  EXPECT_EQ(text(a.body), st->playlist_text_skipping());
  a = answer(st, playlist("_HLS_msn=7"));
  EXPECT_EQ(a.head.status, 400);
  EXPECT_EQ(a.reason, "_HLS_msn 7 is more than two segments ahead of live/cam (next 4)");
  HlsHold h = hold(st, playlist("_HLS_msn=4&_HLS_part=2"));
  EXPECT_FALSE(h.target.part_file);
  EXPECT_EQ(h.target.msn, 4u);
  EXPECT_EQ(h.target.part, 2u);
  EXPECT_EQ(h.timeout_ms, 3000 * static_cast<int64_t>(target));  // three target durations
  EXPECT_EQ(hold(st, playlist("_HLS_msn=6")).target.msn, 6u);
  // An ended playlist gets nothing more: answered at once.
  store_->close(key_);
  EXPECT_EQ(answer(store_->find(key_), playlist("_HLS_msn=6")).head.status, 200);
}

TEST_F(HlsResponderTest, PartsInitAndTheHintedPart) {
  const HlsStreamState* st = ll(1, 2);  // parts 0-4 (segment 0), 5 and 6 (segment 1)
  HlsAnswer a = answer(st, file(HlsSegmentForm::Part, 6));
  EXPECT_EQ(a.head.status, 200);
  EXPECT_EQ(a.head.cache, HlsCachePolicy::immutable(st->segment_max_age_s()));
  EXPECT_EQ(answer(st, file(HlsSegmentForm::Init, 1)).head.status, 200);
  EXPECT_EQ(answer(st, file(HlsSegmentForm::Fmp4, 0)).head.status, 200);
  HlsHold h = hold(st, file(HlsSegmentForm::Part, 7));  // the preload hint
  EXPECT_TRUE(h.target.part_file);
  EXPECT_EQ(h.target.msn, 7u);
  EXPECT_EQ(answer(st, file(HlsSegmentForm::Part, 8)).head.status, 404);  // not hinted yet
  store_->close(key_);
  EXPECT_EQ(answer(store_->find(key_), file(HlsSegmentForm::Part, 7)).head.status, 404);  // will not come
}

TEST_F(HlsResponderTest, HeldRequestsWhenTheWaitEnds) {
  const HlsStreamState* st = ll(2, 1);
  const HlsObjectName reload = playlist("_HLS_msn=2&_HLS_part=1");
  add_part();
  HlsAnswer a = respond_hls_held(st, key_, reload, true);
  EXPECT_EQ(a.head.status, 200);
  EXPECT_EQ(a.head.cache, HlsCachePolicy::max_age(st->playlist().state().target_duration));
  a = respond_hls_held(st, key_, reload, false);
  EXPECT_EQ(a.head.status, 503);
  EXPECT_EQ(a.head.retry_after_s, 1);
  EXPECT_EQ(a.head.cache, HlsCachePolicy::no_cache());
  EXPECT_EQ(a.reason, "live/cam playlist: the requested position did not come within 3 target durations");
  a = respond_hls_held(nullptr, key_, reload, false);
  EXPECT_EQ(a.head.status, 404);
  EXPECT_EQ(a.reason, "stream live/cam has no HLS playlist any more");
  // The hinted part: complete, or never produced.
  const uint64_t part = st->next_part() - 1;
  a = respond_hls_held(st, key_, file(HlsSegmentForm::Part, part), true);
  EXPECT_EQ(a.head.status, 200);
  EXPECT_EQ(text(a.body), "part");
  a = respond_hls_held(st, key_, file(HlsSegmentForm::Part, part + 1), false);
  EXPECT_EQ(a.head.status, 404);
  EXPECT_NE(a.reason.find("was not produced"), std::string::npos);
}

TEST_F(HlsResponderTest, ContentTypes) {
  EXPECT_STREQ(hls_object_content_type(playlist()), "application/vnd.apple.mpegurl");
  EXPECT_STREQ(hls_object_content_type(file(HlsSegmentForm::Ts, 0)), "video/mp2t");
  EXPECT_STREQ(hls_object_content_type(file(HlsSegmentForm::Fmp4, 0)), "video/mp4");
  EXPECT_STREQ(hls_object_content_type(file(HlsSegmentForm::Part, 0)), "video/mp4");
  EXPECT_STREQ(hls_object_content_type(file(HlsSegmentForm::Init, 1)), "video/mp4");
}

}  // namespace
}  // namespace rill::media
