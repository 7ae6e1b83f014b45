// HlsSegmenter with AV1, VP9 and Opus (E-RTMP av01 / vp09 / Opus): fMP4 segments with the codecs'
// sample entries, even when the app's container is MPEG-TS (logged once).
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "media_test_util.h"
#include "rill/media/hls_segmenter.h"
#include "rill/media/hls_store.h"
#include "rill/media/testing/fake_timer_queue.h"

namespace rill::media {
namespace {

using namespace testutil;
using namespace std::chrono_literals;

// av1C of a 160x90 libaom-av1 stream (ffmpeg 5.1), and an OpusHead (stereo, pre-skip 312).
const std::vector<uint8_t> kAv1C = {0x81, 0x00, 0x0c, 0x00, 0x0a, 0x0a, 0x00, 0x00,
                                    0x00, 0x03, 0xb4, 0xfd, 0x93, 0x6b, 0xe4, 0x01};
const std::vector<uint8_t> kOpusHead = {'O',  'p',  'u',  's',  'H',  'e',  'a',  'd',  0x01, 0x02,
                                        0x38, 0x01, 0x80, 0xbb, 0x00, 0x00, 0x00, 0x00, 0x00};

BufferRef ex_tag(uint8_t first, const char* fourcc, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> v = {first, uint8_t(fourcc[0]), uint8_t(fourcc[1]), uint8_t(fourcc[2]),
                            uint8_t(fourcc[3])};
  v.insert(v.end(), body.begin(), body.end());
  return bytes(v);
}

class HlsSegmenterAv1OpusTest : public ::testing::Test {
 protected:
  HlsSegmenterAv1OpusTest() {
    log_ = std::make_shared<spdlog::logger>("hls_test",
                                            std::make_shared<spdlog::sinks::ostream_sink_st>(log_text_));
    store_ = std::make_unique<HlsStore>(timers_, *log_);
    cfg_.enabled = true;
    cfg_.fragment = 1000ms;
    cfg_.window = 10;
  }
  void feed(HlsSegmenter& s, MediaType t, uint32_t ts, BufferRef body) {
    if (1000000 + ts > timers_.now_ms()) timers_.advance(1000000 + ts - timers_.now_ms());
    if (FramePtr f = tag_frame(t, ts, std::move(body))) s.on_frame(*f);
  }

  std::ostringstream log_text_;
  std::shared_ptr<spdlog::logger> log_;
  FakeTimerQueue timers_{1000000};
  config::HlsConfig cfg_;
  const StreamKey key_{"live", "cam"};
  std::unique_ptr<HlsStore> store_;
};

TEST_F(HlsSegmenterAv1OpusTest, TsAppGetsFmp4WithAv01AndOpusEntries) {
  cfg_.container = config::HlsContainer::Ts;
  auto s = std::make_unique<HlsSegmenter>(*store_, key_, cfg_, *log_);
  feed(*s, MediaType::Video, 0, ex_tag(0x90, "av01", kAv1C));      // SequenceStart
  feed(*s, MediaType::Audio, 0, ex_tag(0x90, "Opus", kOpusHead));  // SequenceStart
  for (uint32_t ts = 0; ts < 3000; ts += 20) {
    if (ts % 100 == 0) {
      const bool key = ts % 1000 == 0;
      // A temporal delimiter, then a frame OBU (its bytes do not matter here).
      feed(*s, MediaType::Video, ts, ex_tag(key ? 0x91 : 0xA1, "av01", {0x12, 0x00, 0x32, 0x02, 0xAB, 0xCD}));
    }
    feed(*s, MediaType::Audio, ts, ex_tag(0x91, "Opus", {0xFC, 0xFF, 0xFE}));
  }
  s->finish();
  const HlsStreamState* st = store_->find(key_);
  ASSERT_NE(st, nullptr);
  const std::string text(st->playlist_text()->view());
  EXPECT_NE(text.find("#EXT-X-MAP:URI=\"cam/init-1.mp4\""), std::string::npos) << text << log_text_.str();
  EXPECT_NE(text.find("cam/0.m4s"), std::string::npos) << text;
  const BufferRef* init = st->file(protocol::HlsSegmentForm::Init, 1);
  ASSERT_NE(init, nullptr);
  for (const char* box : {"av01", "av1C", "Opus", "dOps"})
    EXPECT_NE((*init)->view().find(box), std::string_view::npos) << box;
  const BufferRef* seg = st->file(protocol::HlsSegmentForm::Fmp4, 0);
  ASSERT_NE(seg, nullptr);
  EXPECT_EQ((*seg)->view().substr(4, 4), "moof");
  EXPECT_EQ(st->file(protocol::HlsSegmentForm::Ts, 0), nullptr);
  const std::string log = log_text_.str();
  const std::string line = "this stream's HLS is fMP4";
  ASSERT_NE(log.find(line), std::string::npos) << log;
  EXPECT_EQ(log.find(line, log.find(line) + 1), std::string::npos) << "logged once\n" << log;
  EXPECT_EQ(s->stats().samples_dropped, 0u);
}

TEST_F(HlsSegmenterAv1OpusTest, OpusFramesWithoutSequenceStartAreSkipped) {
  cfg_.container = config::HlsContainer::Fmp4;
  auto s = std::make_unique<HlsSegmenter>(*store_, key_, cfg_, *log_);
  for (uint32_t ts = 0; ts < 3000; ts += 20) feed(*s, MediaType::Audio, ts, ex_tag(0x91, "Opus", {0xFC}));
  s->finish();
  EXPECT_EQ(s->stats().segments, 0u);
  EXPECT_GT(s->stats().samples_skipped, 0u);
}

}  // namespace
}  // namespace rill::media
