// HlsSegmenter + HlsStore: cutting rules, discontinuities, republish, retention and grace.
#include "rill/media/hls_segmenter.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "media_test_util.h"
#include "rill/media/hls_store.h"
#include "rill/media/testing/fake_timer_queue.h"

namespace rill::media {
namespace {

using namespace testutil;
using namespace std::chrono_literals;

// ---- TS inspection -----------------------------------------------------------------------------

uint16_t pid_of(const uint8_t* p) { return static_cast<uint16_t>((p[1] & 0x1F) << 8 | p[2]); }

struct TsSummary {
  bool aligned = false;
  bool pat_first = false, pmt_second = false;
  std::set<uint8_t> stream_types;  // from the PMT
  int first_pes_pid = -1;          // PID of the first PES start after the PSI
  bool first_video_random_access = false;
  size_t video_pes = 0, audio_pes = 0;
};

TsSummary inspect(const BufferRef& b) {
  TsSummary s;
  const uint8_t* d = b.data();
  const size_t n = b.size();
  s.aligned = n > 0 && n % 188 == 0;
  if (n < 2 * 188) return s;
  s.pat_first = d[0] == 0x47 && pid_of(d) == 0x0000 && (d[1] & 0x40);
  const uint8_t* pmt = d + 188;
  s.pmt_second = pmt[0] == 0x47 && pid_of(pmt) == 0x1000;
  if (s.pmt_second) {
    // pointer_field 0, table_id 2, section_length, ..., program_info_length 0, then ES loop.
    const uint8_t* sec = pmt + 5;
    const size_t section_length = static_cast<size_t>((sec[1] & 0x0F) << 8 | sec[2]);
    size_t pos = 12;
    while (pos + 5 <= 3 + section_length - 4) {
      s.stream_types.insert(sec[pos]);
      pos += 5 + static_cast<size_t>((sec[pos + 3] & 0x0F) << 8 | sec[pos + 4]);
    }
  }
  for (size_t off = 0; off + 188 <= n; off += 188) {
    const uint8_t* p = d + off;
    if (p[0] != 0x47) {
      s.aligned = false;
      break;
    }
    const uint16_t pid = pid_of(p);
    if (!(p[1] & 0x40) || (pid != 0x100 && pid != 0x101)) continue;
    if (pid == 0x100)
      ++s.video_pes;
    else
      ++s.audio_pes;
    if (s.first_pes_pid < 0) {
      s.first_pes_pid = pid;
      const bool af = (p[3] & 0x20) && p[4] > 0;
      s.first_video_random_access = pid == 0x100 && af && (p[5] & 0x40);
    }
  }
  return s;
}

// ---- fixture -----------------------------------------------------------------------------------

class HlsSegmenterTest : public ::testing::Test {
 protected:
  HlsSegmenterTest() {
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_st>(log_text_);
    log_ = std::make_shared<spdlog::logger>("hls_test", sink_);
    log_->set_level(spdlog::level::debug);
    store_ = std::make_unique<HlsStore>(timers_, *log_);
    cfg_.enabled = true;
    cfg_.fragment = 2000ms;
    cfg_.window = 5;
  }

  std::unique_ptr<HlsSegmenter> make() { return std::make_unique<HlsSegmenter>(*store_, key_, cfg_, *log_); }
  const HlsStreamState* state() const { return store_->find(key_); }

  // Feeds one frame as Stream::publish makes it (a tag whose header does not parse never gets
  // to the segmenter); the fake clock follows the media clock (a real-time publisher).
  void feed(HlsSegmenter& s, MediaType t, uint32_t ts, BufferRef body) {
    const int64_t now = clock_base_ + static_cast<int64_t>(ts) - ts_base_;
    if (now > timers_.now_ms()) timers_.advance(now - timers_.now_ms());
    if (FramePtr f = tag_frame(t, ts, std::move(body))) s.on_frame(*f);
  }
  void headers(HlsSegmenter& s, uint32_t ts = 0) {
    feed(s, MediaType::Data, ts, on_metadata(true));
    feed(s, MediaType::Video, ts, avc_seq_header());
    feed(s, MediaType::Audio, ts, aac_seq_header());
  }
  // 25 fps video with a keyframe every gop_ms and AAC every 23 ms, interleaved by timestamp,
  // for [from, to) ms.
  void av(HlsSegmenter& s, uint32_t from, uint32_t to, uint32_t gop_ms = 2000, bool audio = true,
          bool video = true, size_t vsize = 2000) {
    uint32_t v = from, a = from;
    while ((video && v < to) || (audio && a < to)) {
      if (video && v < to && (!audio || a >= to || v <= a)) {
        const bool key = (v - from) % gop_ms < 40;  // the first frame at or after each GOP start
        feed(s, MediaType::Video, v, key ? avc_keyframe(vsize) : avc_inter(vsize / 4));
        v += 40;
      } else {
        feed(s, MediaType::Audio, a, aac_raw(200));
        a += 23;
      }
    }
  }
  // hls.variants _hi and _lo, fragment 1 s, a window of 20: cam_hi and cam_lo are renditions.
  void use_renditions() {
    cfg_.fragment = 1000ms;
    cfg_.window = 20;
    cfg_.variant_suffixes = {"_hi", "_lo"};
  }
  void restart_clock_at(uint32_t ts) {
    ts_base_ = ts;
    clock_base_ = timers_.now_ms();
  }

  std::vector<protocol::HlsSegmentEntry> listed() const {
    const HlsStreamState* st = state();
    if (!st) return {};
    return {st->playlist().state().segments.begin(), st->playlist().state().segments.end()};
  }
  void expect_segments_well_formed() {
    const HlsStreamState* st = state();
    ASSERT_NE(st, nullptr);
    for (const auto& e : st->playlist().state().segments) {
      const HlsSegment* seg = st->segment(e.sequence);
      ASSERT_NE(seg, nullptr) << e.sequence;
      TsSummary t = inspect(seg->data);
      EXPECT_TRUE(t.aligned) << "segment " << e.sequence << " size " << seg->data.size();
      EXPECT_TRUE(t.pat_first) << e.sequence;
      EXPECT_TRUE(t.pmt_second) << e.sequence;
      EXPECT_EQ(e.uri, "cam/" + std::to_string(e.sequence) + ".ts");
    }
  }

  std::ostringstream log_text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_st> sink_;
  std::shared_ptr<spdlog::logger> log_;
  FakeTimerQueue timers_{1000000};
  config::HlsConfig cfg_;
  const StreamKey key_{"live", "cam"};
  std::unique_ptr<HlsStore> store_;
  int64_t clock_base_ = 1000000, ts_base_ = 0;
};

// ---- cutting -----------------------------------------------------------------------------------

TEST_F(HlsSegmenterTest, CutsAtFirstKeyframeAfterFragment) {
  auto s = make();
  headers(*s);
  av(*s, 0, 12040, 1500);  // keyframes every 1.5 s: 0, 1.5, 3.0, 4.5, 6.0 ...
  auto segs = listed();
  // Cuts at 3.0, 6.0, 9.0, 12.0 (the first keyframe at least 2 s after the segment start).
  ASSERT_EQ(segs.size(), 4u);
  for (const auto& e : segs) EXPECT_DOUBLE_EQ(e.duration_s, 3.0);
  EXPECT_EQ(state()->playlist().state().target_duration, 3u);
  expect_segments_well_formed();
  for (const auto& e : segs) {
    TsSummary t = inspect(state()->segment(e.sequence)->data);
    EXPECT_EQ(t.first_pes_pid, 0x100) << "segment " << e.sequence << " starts with video";
    EXPECT_TRUE(t.first_video_random_access) << "segment " << e.sequence << " starts with a keyframe";
    EXPECT_EQ(t.stream_types, (std::set<uint8_t>{0x1B, 0x0F}));
    EXPECT_GT(t.audio_pes, 0u);
  }
  EXPECT_EQ(s->stats().forced_cuts, 0u);
  EXPECT_EQ(s->stats().samples_dropped, 0u);
}

TEST_F(HlsSegmenterTest, PlaylistRenderedWithRelativeUris) {
  auto s = make();
  headers(*s);
  av(*s, 0, 6040);
  const std::string text(state()->playlist_text()->view());
  EXPECT_NE(text.find("#EXT-X-TARGETDURATION:2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("#EXT-X-MEDIA-SEQUENCE:0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("#EXTINF:2.000,\ncam/0.ts\n#EXTINF:2.000,\ncam/1.ts\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("ENDLIST"), std::string::npos);
  EXPECT_GE(state()->segment_max_age_s(), static_cast<uint32_t>(state()->playlist_duration_s()));
  s->finish();  // the open segment [6.0, 6.04) becomes the last one
  const std::string ended(state()->playlist_text()->view());
  EXPECT_NE(ended.find("cam/3.ts\n#EXT-X-ENDLIST\n"), std::string::npos) << ended;
}

TEST_F(HlsSegmenterTest, Fmp4ContainerMakesInitSectionAndMoofMdatSegments) {
  cfg_.container = config::HlsContainer::Fmp4;
  auto s = make();
  headers(*s);
  av(*s, 0, 6040);
  const std::string text(state()->playlist_text()->view());
  EXPECT_NE(text.find("#EXT-X-VERSION:6\n"), std::string::npos) << text;
  EXPECT_NE(
      text.find("#EXT-X-MAP:URI=\"cam/init-1.mp4\"\n#EXTINF:2.000,\ncam/0.m4s\n#EXTINF:2.000,\ncam/1.m4s\n"),
      std::string::npos)
      << text;
  const BufferRef* init = state()->file(protocol::HlsSegmentForm::Init, 1);
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(std::string((*init)->view().substr(4, 4)), "ftyp");
  const BufferRef* seg = state()->file(protocol::HlsSegmentForm::Fmp4, 1);
  ASSERT_NE(seg, nullptr);
  const std::string_view bytes = (*seg)->view();
  EXPECT_EQ(bytes.substr(4, 4), "moof");
  const size_t moof = static_cast<uint8_t>(bytes[0]) << 24 | static_cast<uint8_t>(bytes[1]) << 16 |
                      static_cast<uint8_t>(bytes[2]) << 8 | static_cast<uint8_t>(bytes[3]);
  EXPECT_EQ(bytes.substr(moof + 4, 4), "mdat");
  // The other container's names do not exist.
  EXPECT_EQ(state()->file(protocol::HlsSegmentForm::Ts, 1), nullptr);
  EXPECT_EQ(state()->file(protocol::HlsSegmentForm::Init, 2), nullptr);
}

TEST_F(HlsSegmenterTest, RepublishAfterAContainerChangeKeepsOldSegmentsFetchable) {
  auto s = make();
  headers(*s);
  av(*s, 0, 4040);
  s->finish();
  s.reset();
  cfg_.container = config::HlsContainer::Fmp4;  // a reload between the two publishers
  s = make();
  headers(*s);
  av(*s, 5000, 9040);
  const std::string text(state()->playlist_text()->view());
  EXPECT_NE(text.find("cam/0.ts\n"), std::string::npos) << text;
  EXPECT_NE(text.find("#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"cam/init-1.mp4\"\n"), std::string::npos)
      << text;
  EXPECT_NE(state()->file(protocol::HlsSegmentForm::Ts, 0), nullptr);
  EXPECT_EQ(state()->file(protocol::HlsSegmentForm::Fmp4, 0), nullptr);
  const uint64_t last = listed().back().sequence;
  EXPECT_NE(state()->file(protocol::HlsSegmentForm::Fmp4, last), nullptr);
  EXPECT_EQ(state()->file(protocol::HlsSegmentForm::Ts, last), nullptr);
}

TEST_F(HlsSegmenterTest, AudioOnlyCutsOnTime) {
  auto s = make();
  feed(*s, MediaType::Audio, 0, aac_seq_header());
  for (uint32_t ts = 0; ts < 12000; ts += 23) feed(*s, MediaType::Audio, ts, aac_raw(200));
  auto segs = listed();
  ASSERT_GE(segs.size(), 4u);
  for (const auto& e : segs) {
    EXPECT_GE(e.duration_s, 2.0);
    EXPECT_LT(e.duration_s, 2.05);
  }
  expect_segments_well_formed();
  TsSummary t = inspect(state()->segment(segs[0].sequence)->data);
  EXPECT_EQ(t.stream_types, (std::set<uint8_t>{0x0F}));
  EXPECT_EQ(t.video_pes, 0u);
}

// Walks every audio PES of a TS segment: the PES count, and the ADTS frames inside them (each
// PES must hold whole frames, back to back, and nothing else).
struct AudioPesCount {
  size_t pes = 0, frames = 0;
  bool whole = true;
};
AudioPesCount count_audio(const BufferRef& b) {
  std::vector<std::vector<uint8_t>> pes;
  for (size_t off = 0; off + 188 <= b.size(); off += 188) {
    const uint8_t* p = b.data() + off;
    if (pid_of(p) != 0x101) continue;
    size_t at = 4;
    if (p[3] & 0x20) at = 5 + p[4];
    if (p[1] & 0x40) pes.emplace_back();
    if (!pes.empty()) pes.back().insert(pes.back().end(), p + at, p + 188);
  }
  AudioPesCount c;
  for (const auto& e : pes) {
    ++c.pes;
    size_t pos = 9 + e[8];
    while (pos + 7 <= e.size() && e[pos] == 0xFF && (e[pos + 1] & 0xF0) == 0xF0) {
      pos += (e[pos + 3] & 3u) << 11 | e[pos + 4] << 3 | e[pos + 5] >> 5;
      ++c.frames;
    }
    c.whole = c.whole && pos == e.size();
  }
  return c;
}

TEST_F(HlsSegmenterTest, TsAudioFramesAreGatheredIntoPesUnderTheGroupSpan) {
  auto s = make();
  headers(*s);
  av(*s, 0, 6000);  // 261 AAC frames, 23 ms apart
  s->finish();
  size_t pes = 0, frames = 0;
  for (const auto& e : listed()) {
    const AudioPesCount c = count_audio(state()->segment(e.sequence)->data);
    EXPECT_TRUE(c.whole) << "segment " << e.sequence;
    pes += c.pes;
    frames += c.frames;
  }
  EXPECT_EQ(frames, 261u);  // every frame, once
  // Frames 23 ms apart, a group spans under 90 ms: 4 a PES (fewer at segment ends).
  EXPECT_LE(pes, 261u / 4 + listed().size());
  EXPECT_GE(pes, 261u / 4);
  EXPECT_EQ(s->stats().samples_dropped, 0u);
}

TEST_F(HlsSegmenterTest, Mp3AudioIsPassedThrough) {
  auto s = make();
  for (uint32_t ts = 0; ts < 8000; ts += 26) {
    std::vector<uint8_t> v{0x2f, 0xff, 0xfb, 0x90, 0x64};
    v.resize(200, 0x55);
    feed(*s, MediaType::Audio, ts, bytes(v));
  }
  auto segs = listed();
  ASSERT_GE(segs.size(), 2u);
  TsSummary t = inspect(state()->segment(segs[0].sequence)->data);
  EXPECT_EQ(t.stream_types, (std::set<uint8_t>{0x03}));
  EXPECT_GT(t.audio_pes, 0u);
}

TEST_F(HlsSegmenterTest, ForcedCutWithoutKeyframeAtMaxFragment) {
  auto s = make();  // max_fragment 0: 3 x fragment = 6 s
  headers(*s);
  av(*s, 0, 20000, 1000000);  // one keyframe at 0, then inter frames only
  auto segs = listed();
  ASSERT_EQ(segs.size(), 3u);
  for (const auto& e : segs) EXPECT_NEAR(e.duration_s, 6.0, 0.05);
  EXPECT_EQ(s->stats().forced_cuts, 3u);
  expect_segments_well_formed();

  s.reset();
  cfg_.max_fragment = 3000ms;
  store_ = std::make_unique<HlsStore>(timers_, *log_);
  auto s2 = std::make_unique<HlsSegmenter>(*store_, key_, cfg_, *log_);
  headers(*s2, 20000);
  restart_clock_at(20000);
  av(*s2, 20000, 30000, 1000000);
  for (const auto& e : listed()) EXPECT_NEAR(e.duration_s, 3.0, 0.05);
  EXPECT_EQ(listed().size(), 3u);
  s2.reset();
}

TEST_F(HlsSegmenterTest, SegmentSizeCapForcesCutsAndDropsOversizedFrames) {
  cfg_.max_segment_size = 256 * 1024;
  auto s = make();
  headers(*s);
  av(*s, 0, 6000, 2000, true, true, 20000);  // ~20 KB keyframes, 5 KB inter frames: > 256 KB per 2 s
  EXPECT_GT(s->stats().forced_cuts, 0u);
  // A 5 MB keyframe cannot fit any segment: dropped, video resumes at the next keyframe.
  feed(*s, MediaType::Video, 6000, avc_keyframe(5 * 1024 * 1024));
  feed(*s, MediaType::Video, 6040, avc_inter(100));
  EXPECT_EQ(s->stats().samples_too_big, 1u);
  restart_clock_at(6080);
  av(*s, 6080, 12080, 2000, true, true, 20000);
  s->finish();
  for (const auto& e : listed()) {
    EXPECT_LE(state()->segment(e.sequence)->data.size(), cfg_.max_segment_size) << e.sequence;
  }
  expect_segments_well_formed();
  EXPECT_LT(s->buffer_capacity(), 1u << 20);
}

TEST_F(HlsSegmenterTest, FiveMegabyteFrameFitsDefaultCap) {
  auto s = make();
  headers(*s);
  av(*s, 0, 2000);
  feed(*s, MediaType::Video, 2000, avc_keyframe(5 * 1024 * 1024));
  restart_clock_at(2040);
  av(*s, 2040, 8040, 2000);
  auto segs = listed();
  ASSERT_GE(segs.size(), 3u);
  EXPECT_GT(state()->segment(segs[1].sequence)->data.size(), 5u * 1024 * 1024);
  expect_segments_well_formed();
  EXPECT_LT(s->buffer_capacity(), 2u << 20) << "the 5 MB buffer was not kept around";
}

// ---- discontinuities ---------------------------------------------------------------------------

TEST_F(HlsSegmenterTest, TimestampsGoingBackwardsCutWithDiscontinuity) {
  auto s = make();
  headers(*s);
  av(*s, 0, 7000);
  // The publisher's clock restarts at 0 (the hub keeps its own deltas: a frame far behind).
  restart_clock_at(0);
  clock_base_ = timers_.now_ms();
  av(*s, 0, 6000);
  EXPECT_EQ(s->stats().timestamp_jumps, 1u);
  auto segs = listed();
  int disc = 0;
  for (const auto& e : segs) {
    disc += e.discontinuity;
    EXPECT_GE(e.duration_s, 0.0);
    EXPECT_LE(e.duration_s, 6.0);
  }
  EXPECT_EQ(disc, 1);
  expect_segments_well_formed();
  const std::string text(state()->playlist_text()->view());
  EXPECT_NE(text.find("#EXT-X-DISCONTINUITY\n"), std::string::npos) << text;
}

TEST_F(HlsSegmenterTest, TimestampJumpingHoursAheadIsADiscontinuity) {
  auto s = make();
  headers(*s);
  av(*s, 0, 5000);
  const uint32_t later = 3u * 3600 * 1000;
  restart_clock_at(later);
  av(*s, later, later + 7000);
  // And across the 32-bit wrap: no jump.
  const uint32_t wrap = 0xFFFFFFFFu - 3000;
  restart_clock_at(wrap);
  av(*s, wrap, wrap + 2000);  // the jump from later+7000 to near 2^32 is another discontinuity
  const uint32_t jumps_before_wrap = static_cast<uint32_t>(s->stats().timestamp_jumps);
  for (uint32_t ts = wrap + 2000, i = 0; i < 150; ++i, ts += 40) {  // crosses 2^32 -> small values
    feed(*s, MediaType::Video, ts, i % 50 == 0 ? avc_keyframe(500) : avc_inter(100));
  }
  EXPECT_EQ(s->stats().timestamp_jumps, jumps_before_wrap) << "a 32-bit wrap is not a jump";
  EXPECT_EQ(jumps_before_wrap, 2u);
  s->finish();
  for (const auto& e : listed()) EXPECT_LE(e.duration_s, 7.0) << e.sequence;
  expect_segments_well_formed();
}

TEST_F(HlsSegmenterTest, CodecChangeRestartsAtNextKeyframeWithDiscontinuity) {
  auto s = make();
  headers(*s);
  av(*s, 0, 5000);
  feed(*s, MediaType::Video, 5000, avc_seq_header());  // identical: nothing happens
  av(*s, 5000, 5400, 2000, true, true);
  EXPECT_EQ(s->stats().discontinuities, 0u);
  // A different SPS (new resolution): cut at the next keyframe, discontinuity.
  feed(*s, MediaType::Video, 5400,
       bytes({0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x4d, 0x00, 0x1e, 0xff, 0xe1, 0x00,
              0x04, 0x67, 0x4d, 0x00, 0x1e, 0x01, 0x00, 0x04, 0x68, 0xee, 0x3c, 0x80}));
  restart_clock_at(5400);
  av(*s, 5400, 12000, 2000);
  s->finish();
  int disc = 0;
  for (const auto& e : listed()) disc += e.discontinuity;
  EXPECT_EQ(disc, 1);
  expect_segments_well_formed();
}

TEST_F(HlsSegmenterTest, HevcWithAnUnusableRecordIsSkippedAudioStillSegmented) {
  auto s = make();
  feed(*s, MediaType::Video, 0, bytes({0x1c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02}));  // codec id 12 header
  feed(*s, MediaType::Audio, 0, aac_seq_header());
  for (uint32_t ts = 0, i = 0; ts < 8000; ts += 20, ++i) {
    if (i % 2 == 0)
      feed(*s, MediaType::Video, ts, bytes({0x1c, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x26}));
    else
      feed(*s, MediaType::Audio, ts, aac_raw(100));
  }
  EXPECT_GE(listed().size(), 2u);
  EXPECT_NE(log_text_.str().find("unusable HEVC sequence header"), std::string::npos) << log_text_.str();
  TsSummary t = inspect(state()->segment(listed()[0].sequence)->data);
  EXPECT_EQ(t.stream_types, (std::set<uint8_t>{0x0F}));
}

// An HEVCDecoderConfigurationRecord with one (tiny) VPS, SPS and PPS, 4-byte lengths.
std::vector<uint8_t> hvcc_record() {
  std::vector<uint8_t> r = {0x01, 0x01, 0x60, 0x00, 0x00, 0x00, 0x90, 0x00, 0x00, 0x00, 0x00, 0x00,
                            0x5D, 0xF0, 0x00, 0xFC, 0xFD, 0xF8, 0xF8, 0x00, 0x00, 0x0F, 0x03};
  for (uint8_t type : {32, 33, 34}) {
    r.insert(r.end(), {static_cast<uint8_t>(0x80 | type), 0x00, 0x01, 0x00, 0x03,
                       static_cast<uint8_t>(type << 1), 0x01, 0xAA});
  }
  return r;
}

// E-RTMP tags: [ex-header | frame type | packet type] 'hvc1' [cts if CodedFrames] body.
BufferRef hvc1_tag(bool key, uint8_t packet_type, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> v = {static_cast<uint8_t>(0x80 | (key ? 0x10 : 0x20) | packet_type), 'h', 'v', 'c',
                            '1'};
  if (packet_type == 1) v.insert(v.end(), {0, 0, 0});
  v.insert(v.end(), body.begin(), body.end());
  return bytes(v);
}

class HlsHevcTest : public HlsSegmenterTest {
 protected:
  void run(config::HlsContainer container) {
    cfg_.container = container;
    auto s = make();
    feed(*s, MediaType::Video, 0, hvc1_tag(true, 0, hvcc_record()));  // SequenceStart
    feed(*s, MediaType::Audio, 0, aac_seq_header());
    for (uint32_t ts = 0, i = 0; ts < 6000; ts += 20, ++i) {
      const bool key = i % 100 == 0;  // a keyframe (IDR_W_RADL, type 19) every 2 s
      const std::vector<uint8_t> nal = {0, 0, 0, 3, static_cast<uint8_t>((key ? 19 : 1) << 1), 0x01, 0xAF};
      if (i % 2 == 0)
        feed(*s, MediaType::Video, ts, hvc1_tag(key, i % 4 == 0 ? 1 : 3, nal));
      else
        feed(*s, MediaType::Audio, ts, aac_raw(100));
    }
    ASSERT_GE(listed().size(), 2u) << log_text_.str();
    if (container == config::HlsContainer::Ts) {
      const BufferRef& seg = state()->segment(listed()[0].sequence)->data;
      TsSummary t = inspect(seg);
      EXPECT_EQ(t.stream_types, (std::set<uint8_t>{0x24, 0x0F}));  // HEVC, AAC
      EXPECT_TRUE(t.first_video_random_access);
      // AUD, then VPS/SPS/PPS before the IRAP picture (Annex B).
      const std::string_view b = seg->view();
      const size_t aud = b.find(std::string_view("\0\0\0\x01\x46\x01\x50", 7));
      const size_t vps = b.find(std::string_view("\0\0\0\x01\x40\x01\xAA", 7));
      const size_t idr = b.find(std::string_view("\0\0\0\x01\x26\x01\xAF", 7));
      EXPECT_NE(aud, std::string_view::npos);
      EXPECT_LT(aud, vps);
      EXPECT_LT(vps, idr);
      EXPECT_NE(idr, std::string_view::npos);
    } else {
      const BufferRef* init = state()->file(protocol::HlsSegmentForm::Init, 1);
      ASSERT_NE(init, nullptr);
      EXPECT_NE((*init)->view().find("hvc1"), std::string_view::npos);
      EXPECT_NE((*init)->view().find("hvcC"), std::string_view::npos);
    }
  }
};

TEST_F(HlsHevcTest, EnhancedRtmpHevcIsCarriedInTs) { run(config::HlsContainer::Ts); }
TEST_F(HlsHevcTest, EnhancedRtmpHevcIsCarriedInFmp4) { run(config::HlsContainer::Fmp4); }

TEST_F(HlsSegmenterTest, NoSequenceHeadersNoSegments) {
  auto s = make();
  for (uint32_t ts = 0, i = 0; ts < 20000; ts += 20, ++i) {
    if (i % 2 == 0)
      feed(*s, MediaType::Video, ts, i % 100 == 0 ? avc_keyframe(500) : avc_inter(100));
    else
      feed(*s, MediaType::Audio, ts, aac_raw(100));
  }
  EXPECT_TRUE(listed().empty());
  EXPECT_EQ(s->pending_bytes(), 0u);
  EXPECT_GT(s->stats().samples_skipped, 0u);
  s->finish();
  ASSERT_NE(state(), nullptr);
  EXPECT_FALSE(state()->has_segments());
}

TEST_F(HlsSegmenterTest, MalformedSamplesAreDroppedAndCounted) {
  auto s = make();
  headers(*s);
  av(*s, 0, 3000);
  // AVCC length field past the end of the sample.
  feed(*s, MediaType::Video, 3000, bytes({0x27, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x41}));
  // (A truncated tag header never gets here: Stream::publish drops it.)
  // An AAC frame over the ADTS limit.
  feed(*s, MediaType::Audio, 3050, aac_raw(9000));
  restart_clock_at(3080);
  av(*s, 3080, 9080, 2000);
  EXPECT_EQ(s->stats().samples_dropped, 2u);
  EXPECT_GE(listed().size(), 3u);
  expect_segments_well_formed();
}

TEST_F(HlsSegmenterTest, RandomInputKeepsSegmentsWellFormedAndBounded) {
  cfg_.fragment = 500ms;
  cfg_.max_segment_size = 64 * 1024;
  std::mt19937 rng(1234);
  auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  const BufferRef other_avc = bytes({0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x4d, 0x00, 0x1e, 0xff, 0xe1, 0x00,
                                     0x04, 0x67, 0x4d, 0x00, 0x1e, 0x01, 0x00, 0x04, 0x68, 0xee, 0x3c, 0x80});
  const BufferRef other_aac = bytes({0xaf, 0x00, 0x11, 0x90});
  const BufferRef bad_aac = bytes({0xaf, 0x00, 0xff});
  auto s = make();
  uint32_t ts = 0;
  size_t max_held = 0;
  for (int i = 0; i < 30000; ++i) {
    const uint32_t r = pick(1000);
    if (r < 10)
      ts = static_cast<uint32_t>(rng());  // anywhere
    else if (r < 20)
      ts -= pick(3000);  // backwards
    else
      ts += pick(50);
    const uint32_t op = pick(100);
    if (op < 55) {
      const bool key = pick(30) == 0;
      feed(*s, MediaType::Video, ts,
           key ? avc_keyframe(1 + pick(40000)) : avc_inter(1 + pick(6000), pick(200)));
    } else if (op < 85) {
      feed(*s, MediaType::Audio, ts, aac_raw(pick(700)));
    } else if (op < 87) {
      feed(*s, MediaType::Video, ts, pick(2) ? avc_seq_header() : other_avc);
    } else if (op < 89) {
      const uint32_t k = pick(3);
      feed(*s, MediaType::Audio, ts, k == 0 ? aac_seq_header() : k == 1 ? other_aac : bad_aac);
    } else if (op < 97) {
      std::vector<uint8_t> junk(pick(64));
      for (auto& b : junk) b = static_cast<uint8_t>(rng());
      feed(*s, pick(2) ? MediaType::Video : MediaType::Audio, ts, bytes(junk));
    } else if (op < 98) {
      feed(*s, MediaType::Audio, ts, bytes({0x2f, 0xff, 0xfb, 0x90, 0x64, 0x00}));  // MP3
    } else if (op == 99 && pick(20) == 0) {
      s = make();  // republish (the old segmenter finishes first)
    }
    if (i % 1000 == 0 && state()) {
      const HlsStreamState* st = state();
      size_t bytes_sum = 0;
      const auto& pl = st->playlist().state();
      const uint64_t first = pl.segments.empty() ? 0 : pl.segments.front().sequence;
      for (uint64_t q = 0; q < first + pl.segments.size(); ++q) {
        if (const HlsSegment* seg = st->segment(q)) {
          bytes_sum += seg->data.size();
          ASSERT_LE(seg->data.size(), cfg_.max_segment_size);
          const TsSummary t = inspect(seg->data);
          ASSERT_TRUE(t.aligned && t.pat_first && t.pmt_second) << q;
        }
      }
      ASSERT_EQ(bytes_sum, st->stats().bytes_held);
      max_held = std::max(max_held, st->stats().segments_retained);
    }
  }
  s.reset();
  EXPECT_GT(store_->stats().segments_produced, 10u);
  EXPECT_LE(max_held, HlsStore::max_retained(*state()));  // even with the clock standing still
}

// ---- store: republish, retention, grace ----------------------------------------------------------

TEST_F(HlsSegmenterTest, RepublishWithinGraceContinuesSequenceWithDiscontinuity) {
  auto s = make();
  headers(*s);
  av(*s, 0, 10040);
  s.reset();  // publisher leaves: last segment + ENDLIST
  const auto before = listed();
  ASSERT_FALSE(before.empty());
  const uint64_t next = state()->playlist().next_sequence();
  EXPECT_TRUE(state()->playlist().ended());
  EXPECT_FALSE(state()->live());

  timers_.advance(5000);  // comes back within the grace
  auto s2 = make();
  EXPECT_FALSE(state()->playlist().ended());
  restart_clock_at(10041);
  headers(*s2, 10041);
  av(*s2, 10041, 20041);
  auto after = listed();
  ASSERT_FALSE(after.empty());
  EXPECT_GE(state()->playlist().state().media_sequence, before.front().sequence);
  // The first segment of the new publisher follows the old ones and is marked.
  bool found = false;
  for (const auto& e : after) {
    if (e.sequence == next) {
      found = true;
      EXPECT_TRUE(e.discontinuity);
    } else if (e.sequence > next) {
      EXPECT_FALSE(e.discontinuity);
    }
  }
  EXPECT_TRUE(found || state()->playlist().state().media_sequence > next);
  const std::string text(state()->playlist_text()->view());
  EXPECT_EQ(text.find("ENDLIST"), std::string::npos);
  expect_segments_well_formed();
}

TEST_F(HlsSegmenterTest, RemovedSegmentsStayFetchableThenAreFreed) {
  auto s = make();
  headers(*s);
  av(*s, 0, 30040);  // 15 segments of 2 s, window 5
  const HlsStreamState* st = state();
  const uint64_t first_listed = st->playlist().state().media_sequence;
  ASSERT_EQ(first_listed, 10u);
  // Segment k leaves the playlist when k + 5 is added, at (k + 6) x 2 s, and stays 2 s + 10 s
  // (its duration + the playlist that listed it, §6.2.2): at 30 s, 0..3 are gone, 4..9 remain.
  EXPECT_EQ(st->segment(0), nullptr);
  EXPECT_EQ(st->segment(3), nullptr);
  for (uint64_t q = 4; q < 10; ++q) EXPECT_NE(st->segment(q), nullptr) << q;
  EXPECT_EQ(st->stats().segments_held, 11u);  // window + retained, bounded
  EXPECT_EQ(st->stats().segments_expired, 4u);
  timers_.advance(13000);
  for (uint64_t q = 4; q < 10; ++q) EXPECT_EQ(st->segment(q), nullptr) << q;
  EXPECT_NE(st->segment(10), nullptr);
  EXPECT_EQ(st->stats().segments_held, 5u);
  size_t bytes = 0;
  for (uint64_t q = 10; q < 15; ++q) bytes += st->segment(q)->data.size();
  EXPECT_EQ(st->stats().bytes_held, bytes);
  EXPECT_EQ(store_->stats().bytes, bytes);
}

TEST_F(HlsSegmenterTest, FasterThanRealTimePublisherStaysBounded) {
  clock_base_ = -1000000000;  // the media runs, the clock stands still
  auto s = make();
  headers(*s);
  av(*s, 0, 200040);  // 100 segments at once
  const HlsStreamStats st = state()->stats();
  EXPECT_EQ(st.segments_produced, 100u);
  EXPECT_EQ(st.segments_retained, HlsStore::max_retained(*state()));
  EXPECT_EQ(st.segments_held, cfg_.window + HlsStore::max_retained(*state()));
}

TEST_F(HlsSegmenterTest, StateDroppedAfterGraceAndBuffersFreed) {
  auto s = make();
  headers(*s);
  av(*s, 0, 12040);
  BufferRef held = state()->segment(state()->playlist().state().media_sequence)->data;  // "being sent"
  s.reset();
  const int64_t grace = HlsStore::grace_ms(*state());
  EXPECT_EQ(grace, 30000);  // max(30 s, 2 x 5 x 2 s, 2 x max-age)
  timers_.advance(grace - 1);
  ASSERT_NE(state(), nullptr);
  EXPECT_TRUE(state()->playlist().ended());
  timers_.advance(1);
  EXPECT_EQ(state(), nullptr);
  EXPECT_EQ(store_->size(), 0u);
  EXPECT_EQ(store_->stats().bytes, 0u);
  EXPECT_EQ(timers_.pending(), 0u);
  // A response still sending a segment keeps its own reference.
  EXPECT_EQ(held->use_count(), 1u);
  EXPECT_TRUE(inspect(held).pat_first);

  // A publisher after the grace starts over.
  auto s2 = make();
  headers(*s2, 20000);
  restart_clock_at(20000);
  av(*s2, 20000, 24040);
  EXPECT_EQ(listed().front().sequence, 0u);
  EXPECT_FALSE(listed().front().discontinuity);
}

TEST_F(HlsSegmenterTest, StoreDestroyedWithPendingTimers) {
  auto s = make();
  headers(*s);
  av(*s, 0, 30040);
  s.reset();
  EXPECT_GT(timers_.pending(), 0u);
  store_.reset();
  EXPECT_EQ(timers_.pending(), 0u);
}

// ---- renditions (hls.variants, docs/abr.md) ----------------------------------------------------

std::vector<protocol::HlsSegmentEntry> listed_of(const HlsStore& store, const StreamKey& key) {
  const HlsStreamState* st = store.find(key);
  if (!st) return {};
  return {st->playlist().state().segments.begin(), st->playlist().state().segments.end()};
}

// Two renditions of cam (use_renditions).
const StreamKey hi_key{"live", "cam_hi"}, lo_key{"live", "cam_lo"};

TEST_F(HlsSegmenterTest, RenditionsCutAtTheGroupsClockWithEqualSequenceNumbers) {
  use_renditions();
  HlsSegmenter hi(*store_, hi_key, cfg_, *log_);
  HlsSegmenter lo(*store_, lo_key, cfg_, *log_);
  headers(hi);
  av(hi, 0, 6040, 400);  // keyframes every 400 ms: 0, 400, 800, 1200, ...
  headers(lo, 2000);     // the second encoder joins later on the same timestamps
  av(lo, 2000, 6040, 400);
  const auto h = listed_of(*store_, hi_key);
  const auto l = listed_of(*store_, lo_key);
  // Cut at the first keyframe at or after each second: 1200, 2000, 3200, 4000, 5200, 6000 (not
  // 1200, 2400, 3600, ... as "fragment after the segment start" gives).
  ASSERT_EQ(h.size(), 6u);
  const std::vector<double> want = {1.2, 0.8, 1.2, 0.8, 1.2, 0.8};
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_EQ(h[i].sequence, i);
    EXPECT_NEAR(h[i].duration_s, want[i], 1e-9) << i;
  }
  // The later rendition's first segment starts in slot 2 and is numbered 2, as hi's is.
  ASSERT_EQ(l.size(), 4u);
  for (size_t i = 0; i < l.size(); ++i) {
    EXPECT_EQ(l[i].sequence, h[i + 2].sequence);
    EXPECT_NEAR(l[i].duration_s, h[i + 2].duration_s, 1e-9) << i;
  }
  EXPECT_EQ(store_->find(lo_key)->playlist().state().discontinuity_sequence, 0u);
}

TEST_F(HlsSegmenterTest, RenditionsCutByPresentationTimeWhateverTheirReorderingDelay) {
  use_renditions();
  HlsSegmenter hi(*store_, hi_key, cfg_, *log_);
  HlsSegmenter lo(*store_, lo_key, cfg_, *log_);
  headers(hi, 920);
  headers(lo, 1000);
  // The same pictures, keyframes presented at every second: hi's encoder reorders (B-frames), so
  // its timestamps (decode times) run 80 ms ahead of the presentation times (composition time
  // 80); lo's (a transcoder without B-frames) are the presentation times.
  for (uint32_t pts = 1000; pts <= 6040; pts += 40) {
    const bool key = pts % 1000 == 0;
    feed(hi, MediaType::Video, pts - 80, key ? avc_keyframe(2000, 80) : avc_inter(500, 80));
    feed(lo, MediaType::Video, pts, key ? avc_keyframe(2000) : avc_inter(500));
  }
  const auto h = listed_of(*store_, hi_key);
  const auto l = listed_of(*store_, lo_key);
  // hi's keyframe at decode time 1920 is presented at 2000: it cuts there, as lo does (by decode
  // time it would wait for the keyframe after it: 2 s segments numbered one slot late).
  ASSERT_EQ(h.size(), 5u);
  ASSERT_EQ(l.size(), 5u);
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_EQ(h[i].sequence, i + 1);
    EXPECT_EQ(l[i].sequence, i + 1);
    EXPECT_NEAR(h[i].duration_s, 1.0, 1e-9) << i;
    EXPECT_NEAR(l[i].duration_s, 1.0, 1e-9) << i;
  }
}

TEST_F(HlsSegmenterTest, NonMembersOfAnAppWithVariantsCutAsBefore) {
  cfg_.fragment = 1000ms;
  cfg_.variant_suffixes = {"_hi", "_lo"};
  auto s = make();  // live/cam: no suffix
  headers(*s);
  av(*s, 0, 4040, 400);
  const auto segs = listed();
  ASSERT_EQ(segs.size(), 3u);
  for (const auto& e : segs) EXPECT_NEAR(e.duration_s, 1.2, 1e-9);
  EXPECT_EQ(state()->variant_entry().find("CODECS"), std::string::npos);  // no traits measured
}

TEST_F(HlsSegmenterTest, RenditionVariantEntryHasCodecsFrameRateAndMeasuredBandwidth) {
  cfg_.fragment = 1000ms;
  cfg_.variant_suffixes = {"_hi"};
  const StreamKey k{"live", "cam_hi"};
  HlsSegmenter hi(*store_, k, cfg_, *log_);
  EXPECT_EQ(store_->find(k)->variant_entry(), "");  // nothing measured yet
  headers(hi);
  av(hi, 0, 3040, 1000, true, true, 4000);
  const HlsStreamState* st = store_->find(k);
  const std::string entry = st->variant_entry();
  uint64_t bits = 0;
  double seconds = 0, peak = 0;
  for (const auto& e : st->playlist().state().segments) {
    const double b = 8.0 * static_cast<double>(st->segment(e.sequence)->data.size());
    bits += static_cast<uint64_t>(b);
    seconds += e.duration_s;
    peak = std::max(peak, b / e.duration_s);
  }
  const auto avg = static_cast<uint64_t>(std::ceil(static_cast<double>(bits) / seconds));
  EXPECT_EQ(entry, "#EXT-X-STREAM-INF:BANDWIDTH=" + std::to_string(static_cast<uint64_t>(std::ceil(peak))) +
                       ",AVERAGE-BANDWIDTH=" + std::to_string(avg) +
                       ",CODECS=\"avc1.64001F,mp4a.40.2\",FRAME-RATE=25.000\ncam_hi.m3u8\n");
  EXPECT_GT(avg, 8u * 25 * 4000 / 4);  // about 25 frames of >= 1000 bytes a second
}

TEST_F(HlsSegmenterTest, LowLatencyRenditionReportsItsSiblings) {
  cfg_.fragment = 1000ms;
  cfg_.low_latency = true;
  cfg_.container = config::HlsContainer::Fmp4;
  cfg_.variant_suffixes = {"_hi", "_mid", "_lo"};
  const StreamKey k{"live", "cam_mid"};
  HlsSegmenter mid(*store_, k, cfg_, *log_);
  headers(mid);
  av(mid, 0, 2300, 1000);  // segments 0 and 1, and parts of segment 2
  const HlsStreamState* st = store_->find(k);
  const std::string text(st->playlist_text()->view());
  const protocol::HlsProgress p = st->progress();
  ASSERT_EQ(p.next_msn, 2u);
  ASSERT_GT(p.open_parts, 0u);
  const std::string position = ",LAST-MSN=2,LAST-PART=" + std::to_string(p.open_parts - 1) + "\n";
  EXPECT_NE(text.find("#EXT-X-RENDITION-REPORT:URI=\"cam_hi.m3u8\"" + position +
                      "#EXT-X-RENDITION-REPORT:URI=\"cam_lo.m3u8\"" + position),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("cam_mid.m3u8"), std::string::npos);
}

}  // namespace
}  // namespace rill::media
