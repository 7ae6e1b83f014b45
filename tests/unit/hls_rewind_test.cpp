// hls.rewind (docs/hls.md "Rewind"): the live playlist with recorded byte ranges before its
// window (protocol::render_media_playlist), the store's rewind history (contiguous, bounded, stable
// sequence numbers across slides) and the recorder cutting its fMP4 fragments where the
// segmenter cuts live segments, on the same timeline, under the same init section.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "codec_test_data.h"
#include "media_test_util.h"
#include "rill/core/byte_order.h"
#include "rill/media/hls_responder.h"
#include "rill/media/hls_segmenter.h"
#include "rill/media/hls_store.h"
#include "rill/media/recorder.h"
#include "rill/media/rewind_link.h"
#include "rill/media/testing/fake_timer_queue.h"
#include "rill/protocol/hls_playlist.h"

namespace rill::media {
namespace {

using namespace std::chrono_literals;
using namespace testutil;
using Bytes = std::vector<uint8_t>;

protocol::HlsRecordedSegment recorded(uint64_t seq, bool disc = false) {
  static const auto path = std::make_shared<const std::string>("/rec/live/cam.mp4");
  return protocol::HlsRecordedSegment{seq, 1.0, disc, path, 1000 * seq, 1000};
}

// Segments 0..last of 1 s in a window of 3.
protocol::HlsPlaylist window_to(uint64_t last) {
  protocol::HlsPlaylist p(3, 1.0);
  for (uint64_t s = 0; s <= last; ++s)
    p.add_segment(1.0, false, "cam/" + std::to_string(s) + ".m4s", "cam/init-1.mp4");
  return p;
}

// (sequence, uri line) of each segment a playlist lists, from EXT-X-MEDIA-SEQUENCE on.
std::vector<std::pair<uint64_t, std::string>> listed(const std::string& text) {
  std::vector<std::pair<uint64_t, std::string>> out;
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("#EXT-X-MEDIA-SEQUENCE:(\\d+)"))) return out;
  uint64_t seq = std::stoull(m[1]);
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    if (!line.empty() && line[0] != '#') out.emplace_back(seq++, line);
  }
  return out;
}

TEST(HlsRewindPlaylist, RecordedRunComesFirstUnderTheWindowsMap) {
  protocol::HlsPlaylist p = window_to(7);
  // A gap (0) and segments still in the window (5, 6) are not listed from the recording.
  const std::vector<protocol::HlsRecordedSegment> rec = {recorded(0), recorded(2), recorded(3),
                                                         recorded(4), recorded(5), recorded(6)};
  const std::string text = p.render(false, rec);
  EXPECT_NE(text.find("#EXT-X-MEDIA-SEQUENCE:2\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("PLAYLIST-TYPE"), std::string::npos);
  const size_t map = text.find("#EXT-X-MAP:URI=\"cam/init-1.mp4\"\n");
  ASSERT_NE(map, std::string::npos) << text;
  EXPECT_EQ(text.find("#EXT-X-MAP", map + 1), std::string::npos) << "one EXT-X-MAP\n" << text;
  EXPECT_EQ(text.find("DISCONTINUITY"), std::string::npos) << text;
  EXPECT_LT(map, text.find("#EXTINF:1.000,\ncam/2.m4s\n"));
  // Each recorded segment keeps the URI it was listed with in the window (RFC 8216 §6.2.1): no
  // byte range, nothing of the recording file in the playlist.
  EXPECT_EQ(text.find("BYTERANGE"), std::string::npos) << text;
  EXPECT_EQ(text.find("/rec/"), std::string::npos) << text;
  const auto l = listed(text);
  ASSERT_EQ(l.size(), 6u) << text;
  for (uint64_t i = 0; i < l.size(); ++i)
    EXPECT_EQ(l[i], std::make_pair(2 + i, "cam/" + std::to_string(2 + i) + ".m4s")) << text;
}

// A segment listed by an earlier reload keeps its URI when it leaves the window for the history.
TEST(HlsRewindPlaylist, ASegmentKeepsItsUriWhenItLeavesTheWindow) {
  protocol::HlsPlaylist p = window_to(5);
  std::vector<protocol::HlsRecordedSegment> rec = {recorded(1), recorded(2)};
  const auto before = listed(p.render(false, rec));
  p.add_segment(1.0, false, "cam/6.m4s", "cam/init-1.mp4");
  rec.push_back(recorded(3));
  const auto after = listed(p.render(false, rec));
  ASSERT_FALSE(before.empty());
  ASSERT_EQ(after.front(), before.front());
  for (const auto& seg : before) {
    const auto it =
        std::find_if(after.begin(), after.end(), [&](const auto& a) { return a.first == seg.first; });
    ASSERT_NE(it, after.end()) << seg.first;
    EXPECT_EQ(*it, seg);
  }
}

TEST(HlsRewindPlaylist, NoRunWithoutTheSegmentRightBeforeTheWindow) {
  protocol::HlsPlaylist p = window_to(7);
  const std::vector<protocol::HlsRecordedSegment> rec = {recorded(2), recorded(3)};
  const std::string text = p.render(false, rec);
  EXPECT_NE(text.find("#EXT-X-MEDIA-SEQUENCE:5\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("BYTERANGE"), std::string::npos) << text;
}

TEST(HlsRewindPlaylist, DiscontinuitySequenceStartsAtTheRecordedRun) {
  protocol::HlsPlaylist p(3, 1.0);
  p.continue_from(2, 0);  // segment 2 carries a discontinuity
  for (int i = 0; i < 6; ++i) p.add_segment(1.0, false, "s", "m");
  ASSERT_EQ(p.state().media_sequence, 5u);
  ASSERT_EQ(p.state().discontinuity_sequence, 1u);  // 2 slid out with its tag
  const std::vector<protocol::HlsRecordedSegment> rec = {recorded(2, true), recorded(3), recorded(4)};
  const std::string text = p.render(false, rec);
  EXPECT_NE(text.find("#EXT-X-MEDIA-SEQUENCE:2\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("DISCONTINUITY-SEQUENCE"), std::string::npos) << text;
  EXPECT_NE(text.find("#EXT-X-DISCONTINUITY\n#EXTINF:1.000,\n2.m4s\n"), std::string::npos) << text;
}

class HlsRewindStore : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = std::make_shared<spdlog::logger>("rewind", std::make_shared<spdlog::sinks::null_sink_st>());
    store_ = std::make_unique<HlsStore>(timers_, *log_);
    cfg_.enabled = true;
    cfg_.fragment = 1000ms;
    cfg_.window = 3;
    cfg_.container = config::HlsContainer::Fmp4;
    cfg_.rewind = 6000ms;
    store_->open(key_, cfg_);
    store_->set_init(key_, SharedBuffer::copy_of(std::string_view("init")));
  }
  uint64_t init_id() {
    uint64_t id = 0;
    store_->current_init(key_, id);
    return id;
  }
  void segment() { store_->add_segment(key_, SharedBuffer::copy_of(std::string_view("seg")), 1.0, false); }
  std::string text() {
    const BufferRef b = store_->find(key_)->playlist_text();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }

  FakeTimerQueue timers_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<HlsStore> store_;
  config::HlsConfig cfg_;
  StreamKey key_{"live", "cam"};
};

TEST_F(HlsRewindStore, SequenceNumbersStayWhereTheyWereAcrossSlides) {
  std::map<uint64_t, std::string> uris;  // a segment's URI never changes (RFC 8216 §6.2.1)
  uint64_t first = 0;
  for (uint64_t s = 0; s < 30; ++s) {
    segment();
    store_->add_recorded(key_, init_id(), recorded(s));  // recorded while still in the window
    const auto l = listed(text());
    ASSERT_FALSE(l.empty());
    EXPECT_GE(l.front().first, first) << "the media sequence never goes back";
    first = l.front().first;
    for (size_t i = 1; i < l.size(); ++i) EXPECT_EQ(l[i].first, l[i - 1].first + 1);
    for (const auto& [seq, uri] : l) {
      EXPECT_EQ(uri, "cam/" + std::to_string(seq) + ".m4s");
      EXPECT_EQ(uris.emplace(seq, uri).first->second, uri) << seq;
    }
    // Bounded by rewind (6 s of history; the window's 3 are part of it).
    EXPECT_LE(store_->find(key_)->rewind_segments(), 6u);
  }
  EXPECT_EQ(listed(text()).size(), 6u);
  EXPECT_EQ(listed(text()).front().first, 24u);
}

TEST_F(HlsRewindStore, AGapRestartsTheHistoryAndALateSegmentIsNotPrepended) {
  for (uint64_t s = 0; s < 6; ++s) {
    segment();
    if (s != 2) store_->add_recorded(key_, init_id(), recorded(s));
  }
  // 0 and 1 went before the gap; 3.. follow it; the window is 3..5.
  EXPECT_NE(text().find("#EXT-X-MEDIA-SEQUENCE:3\n"), std::string::npos) << text();
  segment();  // 3 leaves the window, recorded: listed from the recording
  EXPECT_NE(text().find("#EXT-X-MEDIA-SEQUENCE:3\n"), std::string::npos) << text();
  // A segment that left the window unrecorded ends the history; its late copy is refused.
  segment();
  segment();  // 4 and 5 left; history 3..5: still contiguous
  EXPECT_NE(text().find("#EXT-X-MEDIA-SEQUENCE:3\n"), std::string::npos) << text();
  segment();  // 6 leaves without a recording: the history ends
  store_->add_recorded(key_, init_id(), recorded(6));
  EXPECT_NE(text().find("#EXT-X-MEDIA-SEQUENCE:7\n"), std::string::npos) << text();
}

TEST_F(HlsRewindStore, ANewInitSectionOrPublishStartsAgain) {
  for (uint64_t s = 0; s < 5; ++s) {
    segment();
    store_->add_recorded(key_, init_id(), recorded(s));
  }
  EXPECT_NE(text().find("#EXT-X-MEDIA-SEQUENCE:0\n"), std::string::npos) << text();
  const uint64_t old_init = init_id();
  store_->set_init(key_, SharedBuffer::copy_of(std::string_view("init2")));
  EXPECT_NE(text().find("#EXT-X-MEDIA-SEQUENCE:2\n"), std::string::npos) << text();
  segment();
  store_->add_recorded(key_, old_init, recorded(5));  // cut under the old init: not listed
  EXPECT_EQ(store_->find(key_)->rewind_segments(), 0u);
}

// A history segment no longer in memory: its live URI is held while the reader reads it from the
// recording, then answered with those bytes (and from the read-back cache after that).
TEST_F(HlsRewindStore, ASegmentOutOfMemoryIsReadBackFromTheRecording) {
  struct Read {
    std::string path;
    uint64_t offset = 0, length = 0;
    std::function<void(BufferRef)> done;
  };
  std::vector<Read> reads;
  store_->set_recorded_reader([&reads](const std::string& path, uint64_t offset, uint64_t length,
                                       std::function<void(BufferRef)> done) {
    reads.push_back(Read{path, offset, length, std::move(done)});
    return true;
  });
  for (uint64_t s = 0; s < 30; ++s) {
    segment();
    store_->add_recorded(key_, init_id(), recorded(s));
    timers_.advance(1000);
  }
  timers_.advance(10000);  // the retained copies expire (RFC 8216 §6.2.2)
  const HlsStreamState* st = store_->find(key_);
  ASSERT_EQ(listed(text()).front().first, 24u);
  ASSERT_EQ(st->segment(24), nullptr) << "expired from memory";
  const protocol::HlsObjectName seg24{false, 24, protocol::HlsSegmentForm::Fmp4};
  HlsResponse r = respond_hls(st, key_, seg24);
  ASSERT_TRUE(std::holds_alternative<HlsHold>(r));
  int answered = 0;
  for (int i = 0; i < 2; ++i) {  // two clients, one read
    store_->wait(key_, std::get<HlsHold>(r).target, std::get<HlsHold>(r).timeout_ms, [&](bool ok) {
      ++answered;
      const HlsAnswer a = respond_hls_held(store_->find(key_), key_, seg24, ok);
      ASSERT_EQ(a.head.status, 200) << a.reason;
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(a.body.data()), a.body.size()), "recorded 24");
    });
  }
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].path, "/rec/live/cam.mp4");
  EXPECT_EQ(reads[0].offset, 24000u);
  EXPECT_EQ(reads[0].length, 1000u);
  EXPECT_EQ(answered, 0);
  reads[0].done(SharedBuffer::copy_of(std::string_view("recorded 24")));
  EXPECT_EQ(answered, 2);
  const HlsResponse again = respond_hls(store_->find(key_), key_, seg24);
  ASSERT_TRUE(std::holds_alternative<HlsAnswer>(again));
  EXPECT_EQ(std::get<HlsAnswer>(again).head.status, 200);
  // A failed read: 404, not a hang; a sequence outside the history: 404 at once.
  const protocol::HlsObjectName seg25{false, 25, protocol::HlsSegmentForm::Fmp4};
  r = respond_hls(store_->find(key_), key_, seg25);
  ASSERT_TRUE(std::holds_alternative<HlsHold>(r));
  int status = 0;
  store_->wait(key_, std::get<HlsHold>(r).target, 3000,
               [&](bool ok) { status = respond_hls_held(store_->find(key_), key_, seg25, ok).head.status; });
  ASSERT_EQ(reads.size(), 2u);
  reads[1].done(BufferRef{});
  EXPECT_EQ(status, 404);
  const HlsResponse old = respond_hls(store_->find(key_), key_, {false, 3, protocol::HlsSegmentForm::Fmp4});
  ASSERT_TRUE(std::holds_alternative<HlsAnswer>(old));
  EXPECT_EQ(std::get<HlsAnswer>(old).head.status, 404);
}

// RFC 8216 §6.2.2: a segment that leaves the front of the history (older than rewind) stays
// available for its duration plus the duration of the playlist that listed it, then is 404; only
// its place in the recording is kept meanwhile (and a read-back copy goes with it).
TEST_F(HlsRewindStore, ASegmentRemovedFromTheHistoryStaysAvailableForItsDurationPlusThePlaylists) {
  std::vector<std::function<void(BufferRef)>> reads;
  store_->set_recorded_reader(
      [&reads](const std::string&, uint64_t, uint64_t, std::function<void(BufferRef)> done) {
        reads.push_back(std::move(done));
        return true;
      });
  for (uint64_t s = 0; s < 30; ++s) {
    segment();
    store_->add_recorded(key_, init_id(), recorded(s));
    timers_.advance(1000);
  }
  // t = 30 s. The playlist lists 24..29 (6 s of rewind). 23 left it at t = 29 s, when 29 was
  // recorded; from 29's addition until then it listed 23..29 (7 s): 23 is available until
  // 29 + 1 (its duration) + 7 (the longest playlist that listed it) = 37 s.
  ASSERT_EQ(listed(text()).front().first, 24u);
  const HlsStreamState* st = store_->find(key_);
  ASSERT_EQ(st->segment(23), nullptr) << "gone from memory";
  ASSERT_NE(st->recorded_segment(23), nullptr);
  EXPECT_EQ(st->recorded_segment(23)->offset, 23000u);
  EXPECT_LE(st->rewind_removed(), 8u) << "bounded: the removed ones expire";
  EXPECT_EQ(st->recorded_segment(16), nullptr) << "removed at 22 s, expired at 30 s";
  EXPECT_NE(st->recorded_segment(17), nullptr) << "removed at 23 s, expires at 31 s";
  const protocol::HlsObjectName seg23{false, 23, protocol::HlsSegmentForm::Fmp4};
  HlsResponse r = respond_hls(st, key_, seg23);
  ASSERT_TRUE(std::holds_alternative<HlsHold>(r));
  int status = 0;
  store_->wait(key_, std::get<HlsHold>(r).target, 3000,
               [&](bool ok) { status = respond_hls_held(store_->find(key_), key_, seg23, ok).head.status; });
  ASSERT_EQ(reads.size(), 1u);
  reads[0](SharedBuffer::copy_of(std::string_view("recorded 23")));
  EXPECT_EQ(status, 200);
  timers_.advance(6999);  // 36.999 s
  r = respond_hls(store_->find(key_), key_, seg23);
  ASSERT_TRUE(std::holds_alternative<HlsAnswer>(r)) << "from the read-back copy";
  EXPECT_EQ(std::get<HlsAnswer>(r).head.status, 200);
  EXPECT_EQ(store_->find(key_)->recorded_segment(22), nullptr) << "expired at 36 s";
  timers_.advance(1);  // 37 s: 23 expires, its read-back copy is no longer served
  EXPECT_EQ(store_->find(key_)->recorded_segment(23), nullptr);
  r = respond_hls(store_->find(key_), key_, seg23);
  ASSERT_TRUE(std::holds_alternative<HlsAnswer>(r));
  EXPECT_EQ(std::get<HlsAnswer>(r).head.status, 404);
}

// A history that ends (a segment left the window unrecorded) is removed from the playlist as a
// whole: its segments too stay available for §6.2.2's time.
TEST_F(HlsRewindStore, AnEndedHistoryStaysAvailableForItsDurationPlusThePlaylists) {
  for (uint64_t s = 0; s < 6; ++s) {
    segment();
    store_->add_recorded(key_, init_id(), recorded(s));
    timers_.advance(1000);
  }
  segment();  // 6, never recorded
  timers_.advance(1000);
  segment();
  segment();
  segment();  // 6 left the window unrecorded: the playlist (0..8, 9 s) drops 0..5
  ASSERT_NE(text().find("#EXT-X-MEDIA-SEQUENCE:7\n"), std::string::npos) << text();
  EXPECT_EQ(store_->find(key_)->rewind_segments(), 0u);
  for (uint64_t s = 0; s < 6; ++s) EXPECT_NE(store_->find(key_)->recorded_segment(s), nullptr) << s;
  timers_.advance(9999);  // 1 s + the 9 s playlist that listed them
  EXPECT_NE(store_->find(key_)->recorded_segment(5), nullptr);
  timers_.advance(1);
  EXPECT_EQ(store_->find(key_)->recorded_segment(5), nullptr);
  EXPECT_EQ(store_->find(key_)->rewind_removed(), 0u);
}

// ---- the recorder and the segmenter together ----

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/rill-rewind-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

FramePtr video_header() {
  Bytes b = {0x17, 0, 0, 0, 0};
  b.insert(b.end(), testdata::kAvcRecord.begin(), testdata::kAvcRecord.end());
  return tag_frame(MediaType::Video, 0, bytes(b));
}

// Per traf of each moof in `bytes`: (track, tfdt, samples).
struct Traf {
  uint32_t track;
  uint64_t tfdt;
  uint32_t samples;
  bool operator==(const Traf&) const = default;
};
std::vector<Traf> trafs(std::span<const uint8_t> b, bool& starts_with_moof) {
  std::vector<Traf> out;
  starts_with_moof = b.size() >= 8 && std::string(reinterpret_cast<const char*>(b.data() + 4), 4) == "moof";
  for (size_t at = 0; at + 8 <= b.size();) {
    const uint32_t size = load_be32(b.data() + at);
    if (size < 8 || at + size > b.size()) break;
    if (std::string(reinterpret_cast<const char*>(b.data() + at + 4), 4) == "moof") {
      for (size_t p = at + 8; p + 8 <= at + size;) {
        const uint32_t ps = load_be32(b.data() + p);
        if (std::string(reinterpret_cast<const char*>(b.data() + p + 4), 4) == "traf") {
          Traf t{};
          for (size_t q = p + 8; q + 8 <= p + ps;) {
            const uint32_t qs = load_be32(b.data() + q);
            const std::string qt(reinterpret_cast<const char*>(b.data() + q + 4), 4);
            if (qt == "tfhd") t.track = load_be32(b.data() + q + 12);
            if (qt == "tfdt")
              t.tfdt = (uint64_t{load_be32(b.data() + q + 12)} << 32) | load_be32(b.data() + q + 16);
            if (qt == "trun") t.samples = load_be32(b.data() + q + 12);
            q += qs;
          }
          out.push_back(t);
        }
        p += ps;
      }
    }
    at += size;
  }
  return out;
}

TEST(HlsRewindRecorder, LiveSegmentsAreWholeFragmentRunsOfTheFileWithTheirTimestamps) {
  TempDir dir;
  auto log = std::make_shared<spdlog::logger>("rewind", std::make_shared<spdlog::sinks::null_sink_st>());
  FakeTimerQueue timers;
  HlsStore store(timers, *log);
  const StreamKey key{"live", "cam"};
  config::HlsConfig hls;
  hls.enabled = true;
  hls.fragment = 1000ms;
  hls.window = 20;
  hls.container = config::HlsContainer::Fmp4;
  hls.rewind = 60000ms;
  config::RecordConfig rec_cfg;
  rec_cfg.mode = config::RecordMode::All;
  rec_cfg.path = dir.path + "/{app}/{name}-{start:%s}";
  rec_cfg.flush = 300ms;     // fragments inside a segment too
  rec_cfg.segment = 4000ms;  // rotation waits for a segment boundary
  record::FileWriter writer(record::FileWriterOptions{});
  HlsSegmenter seg(store, key, hls, *log);
  Recorder rec(writer, key, rec_cfg, *log);
  auto link = std::make_shared<RewindLink>(store, key);
  seg.set_rewind(link);
  rec.follow_segments(link);
  // 10 s from timestamp 5000 (the segment timeline is the stream's: files do not start at 0).
  std::vector<FramePtr> frames = {video_header(),
                                  tag_frame(MediaType::Audio, 5000, bytes({0xaf, 0x00, 0x12, 0x10}))};
  for (uint32_t v = 0, a = 0;;) {
    const uint32_t vt = 5000 + v * 40, at = 5000 + a * 23;
    if (vt >= 15000) break;
    if (at <= vt) {
      frames.push_back(tag_frame(MediaType::Audio, at, aac_raw(20)));
      ++a;
    } else {
      frames.push_back(tag_frame(MediaType::Video, vt, v % 25 == 0 ? avc_keyframe(300) : avc_inter(100)));
      ++v;
    }
  }
  for (const FramePtr& f : frames) {
    seg.on_frame(f);
    rec.on_frame(f);
    writer.wait_idle();
  }
  const HlsStreamState* st = store.find(key);
  ASSERT_NE(st, nullptr);
  const auto history = st->rewind_view();
  // Segment 0 (the file opened with it, not at a boundary) is not in it; 1..8 are (9 is the one
  // still open).
  ASSERT_GE(history.size(), 7u);
  EXPECT_EQ(history.front().sequence, 1u);
  std::set<std::string> paths;
  for (size_t i = 0; i < history.size(); ++i) {
    const auto& h = history[i];
    if (i > 0) {
      EXPECT_EQ(h.sequence, history[i - 1].sequence + 1);
    }
    ASSERT_TRUE(h.path);
    paths.insert(*h.path);
    const HlsSegment* live = st->segment(h.sequence);
    ASSERT_NE(live, nullptr);
    std::ifstream in(*h.path, std::ios::binary);
    const Bytes file{std::istreambuf_iterator<char>(in), {}};
    ASSERT_LE(h.offset + h.length, file.size());
    bool rec_moof = false, live_moof = false;
    const auto r = trafs(std::span<const uint8_t>(file).subspan(h.offset, h.length), rec_moof);
    const auto l = trafs(live->data.span(), live_moof);
    EXPECT_TRUE(rec_moof && live_moof);
    ASSERT_FALSE(r.empty());
    ASSERT_EQ(l.size(), 2u);  // the live segment: one moof, video then audio
    // Same tracks, same start time, same samples.
    std::map<uint32_t, uint64_t> first_tfdt, count;
    for (const Traf& t : r) {
      if (!first_tfdt.count(t.track)) first_tfdt[t.track] = t.tfdt;
      count[t.track] += t.samples;
    }
    EXPECT_GT(r.size(), 2u) << "the recorder's own flushes inside the segment";
    for (const Traf& t : l) {
      EXPECT_EQ(first_tfdt[t.track], t.tfdt) << "segment " << h.sequence << " track " << t.track;
      EXPECT_EQ(count[t.track], t.samples) << "segment " << h.sequence << " track " << t.track;
    }
  }
  EXPECT_GE(paths.size(), 2u) << "rotated (segment: 4s) at a segment boundary, and still listed";
  // The file starts with the live init section.
  uint64_t id = 0;
  const BufferRef init = store.current_init(key, id);
  std::string first_path;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path))
    first_path = e.path().string();
  std::ifstream in(first_path, std::ios::binary);
  const Bytes file{std::istreambuf_iterator<char>(in), {}};
  ASSERT_GE(file.size(), init.size());
  EXPECT_TRUE(std::equal(init.span().begin(), init.span().end(), file.begin()));
  rec.stop();
  writer.wait_idle();
}

}  // namespace
}  // namespace rill::media
