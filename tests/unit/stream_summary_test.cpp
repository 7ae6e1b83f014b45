// protocol/stream_summary: the codec details the control plane shows, read from sequence headers.
// The bytes are the first video and audio tags of an FLV made by ffmpeg (libx264 ultrafast
// 640x360, AAC LC 44.1 kHz mono); ffprobe reports h264 Constrained Baseline level 30, 640x360,
// aac LC 44100 Hz 1 channel for that file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rill/protocol/stream_summary.h"

using namespace rill::protocol;

namespace {

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

const std::string kAvcHeader =
    "17000000000142c01effe100196742c01eda0280bfe5c044000003000400000300ca3c58ba8001000468ce3c80";
const std::string kAacHeader = "af00120856e500";

}  // namespace

TEST(StreamSummary, AvcSequenceHeader) {
  const auto v = summarize_video_header(from_hex(kAvcHeader));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->codec, "h264");
  EXPECT_EQ(v->width, 640u);
  EXPECT_EQ(v->height, 360u);
  EXPECT_EQ(v->profile, "Constrained Baseline");
  EXPECT_EQ(v->level, "3.0");
}

TEST(StreamSummary, AacSequenceHeader) {
  const auto a = summarize_audio_header(from_hex(kAacHeader));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->codec, "aac");
  EXPECT_EQ(a->sample_rate, 44100u);
  EXPECT_EQ(a->channels, 1u);
  EXPECT_EQ(a->profile, "LC");
}

TEST(StreamSummary, NotASequenceHeader) {
  // An AVC inter frame (frame type 2, packet type 1) and an AAC raw frame.
  EXPECT_FALSE(summarize_video_header(from_hex("2701000000000000020910")));
  EXPECT_FALSE(summarize_audio_header(from_hex("af01210000")));
  EXPECT_FALSE(summarize_video_header({}));
  EXPECT_FALSE(summarize_audio_header({}));
}

TEST(StreamSummary, TruncatedRecordsAreRejectedNotThrown) {
  const auto avc = from_hex(kAvcHeader);
  for (size_t n = 0; n < avc.size() - 4; ++n) {
    const auto v = summarize_video_header(std::span<const uint8_t>(avc.data(), n));
    if (v) {
      EXPECT_EQ(v->codec, "h264") << n;
    }
  }
  EXPECT_FALSE(summarize_audio_header(from_hex("af00")));
}

TEST(StreamSummary, LegacyMp3FromTagBits) {
  // SoundFormat 2 (MP3), rate 3 (44 kHz), 16-bit, stereo.
  const auto a = summarize_audio_header(from_hex("2fff"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->codec, "mp3");
  EXPECT_EQ(a->sample_rate, 44100u);
  EXPECT_EQ(a->channels, 2u);
}

TEST(StreamSummary, ProfileAndLevelNames) {
  EXPECT_EQ(avc_profile_name(100, 0), "High");
  EXPECT_EQ(avc_profile_name(66, 0), "Baseline");
  EXPECT_EQ(avc_profile_name(66, 0x40), "Constrained Baseline");
  EXPECT_EQ(avc_level_name(31, 0, 100), "3.1");
  EXPECT_EQ(avc_level_name(11, 0x10, 66), "1b");
  EXPECT_EQ(avc_level_name(11, 0x10, 100), "1.1");
}
