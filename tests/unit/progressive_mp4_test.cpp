// Progressive MP4 cuts of fMP4 recordings made here with the recorder's muxer (Fmp4Muxer),
// indexed with keep_samples: where a cut starts and ends, its sample tables, the byte runs that
// make its mdat, a span over two files, and where it stops.
#include "rill/protocol/progressive_mp4.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codec_test_data.h"
#include "rill/protocol/fmp4_muxer.h"

using namespace rill::protocol;
using namespace rill::testdata;
using Bytes = std::vector<uint8_t>;

namespace {

constexpr uint32_t kNonSync = 0x00010000;

uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
uint64_t be64(const uint8_t* p) { return uint64_t(be32(p)) << 32 | be32(p + 4); }

// A sample whose bytes say which track, file and number it is (an AVC NAL or an AAC frame).
Bytes video_sample(int file, int n, bool key) {
  Bytes b = {0,
             0,
             0,
             6,
             static_cast<uint8_t>(key ? 0x65 : 0x41),
             0x88,
             static_cast<uint8_t>(file),
             static_cast<uint8_t>(n >> 8),
             static_cast<uint8_t>(n),
             0x80};
  return b;
}
Bytes audio_sample(int file, int n) {
  return Bytes{0x21, 0x10, static_cast<uint8_t>(file), static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)};
}

struct Recording {
  Bytes bytes;
  RecordingIndex index{[] {
    RecordingIndexLimits l;
    l.keep_samples = true;
    return l;
  }()};
};

// `seconds` of 25 fps video (a keyframe every `gop` frames; a fragment per second as the
// recorder flushes before a keyframe) and AAC at 1024/44100 s, or audio only.
// `level`: another AVCLevelIndication in the decoder configuration (another stsd).
std::unique_ptr<Recording> record(int file, int seconds, int gop, bool video = true, uint8_t level = 0) {
  Fmp4Tracks t;
  t.has_video = video;
  t.video_record = kAvcRecord;
  if (level) t.video_record[3] = level;
  t.has_audio = true;
  t.audio_asc = kAsc;
  Fmp4Muxer mux(t);
  auto r = std::make_unique<Recording>();
  r->bytes = mux.init_segment();
  int a = 0;
  for (int frame = 0; frame < seconds * 25; ++frame) {
    const int64_t ms = frame * 40;
    if (frame > 0 && frame % 25 == 0) mux.flush(ms, r->bytes);
    if (video) mux.add({true, ms, 0, frame % gop == 0, video_sample(file, frame, frame % gop == 0)});
    for (; a * 1024 * 1000 / 44100 < ms + 40; ++a)
      mux.add({false, int64_t(a) * 1024 * 1000 / 44100, 0, true, audio_sample(file, a)});
  }
  mux.flush(int64_t(seconds) * 1000, r->bytes);
  r->index.feed(r->bytes);
  return r;
}

ProgressiveMp4File file_of(const Recording& r, uint32_t id, double start) {
  return ProgressiveMp4File{id, start, r.index.tracks(), r.index.fragments()};
}

// The child boxes of `body` by type (the first of each), and a path through them.
std::map<std::string, std::vector<std::span<const uint8_t>>> children(std::span<const uint8_t> body) {
  std::map<std::string, std::vector<std::span<const uint8_t>>> out;
  for (size_t off = 0; off + 8 <= body.size();) {
    uint64_t size = be32(&body[off]);
    size_t hdr = 8;
    if (size == 1) size = be64(&body[off + 8]), hdr = 16;
    if (size < hdr || size > body.size() - off) break;
    out[std::string(reinterpret_cast<const char*>(&body[off + 4]), 4)].push_back(
        body.subspan(off + hdr, size - hdr));
    off += size;
  }
  return out;
}
std::span<const uint8_t> box(std::span<const uint8_t> in, std::initializer_list<const char*> path,
                             size_t trak = 0) {
  for (const char* type : path) {
    auto c = children(in);
    const auto& list = c[type];
    const size_t i = std::string(type) == "trak" ? trak : 0;
    if (list.size() <= i) return {};
    in = list[i];
  }
  return in;
}
std::span<const uint8_t> stbl_box(const ProgressiveMp4& m, size_t trak, const char* type) {
  return box(m.head, {"moov", "trak", "mdia", "minf", "stbl", type}, trak);
}

// The cut's mdat payload, read from the files through its runs.
Bytes payload_of(const ProgressiveMp4& m, const std::vector<const Recording*>& files) {
  Bytes out;
  for (const Mp4ByteRun& r : m.runs) {
    const Bytes& b = files.at(r.file)->bytes;
    EXPECT_LE(r.offset + r.length, b.size());
    out.insert(out.end(), b.begin() + static_cast<ptrdiff_t>(r.offset),
               b.begin() + static_cast<ptrdiff_t>(r.offset + r.length));
  }
  return out;
}

// The video samples' numbers in the cut (their payload's frame counter), read through stsz/stco.
std::vector<int> video_numbers(const ProgressiveMp4& m, const Bytes& whole) {
  const auto stsz = stbl_box(m, 0, "stsz"), stco = stbl_box(m, 0, "stco"), stsc = stbl_box(m, 0, "stsc");
  std::vector<int> out;
  const uint32_t chunks = be32(&stco[4]);
  const uint32_t stsc_n = be32(&stsc[4]);
  size_t sample = 0;
  for (uint32_t c = 0; c < chunks; ++c) {
    uint32_t per = 0;
    for (uint32_t e = 0; e < stsc_n; ++e) {
      if (be32(&stsc[8 + 12 * e]) <= c + 1) per = be32(&stsc[8 + 12 * e + 4]);
    }
    uint64_t at = be32(&stco[8 + 4 * c]);
    for (uint32_t i = 0; i < per; ++i, ++sample) {
      const uint32_t size = be32(&stsz[12 + 4 * sample]);
      out.push_back(whole.at(at + 7) << 8 | whole.at(at + 8));
      at += size;
    }
  }
  return out;
}

Bytes whole_file(const ProgressiveMp4& m, const std::vector<const Recording*>& files) {
  Bytes out = m.head;
  const Bytes p = payload_of(m, files);
  out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST(ProgressiveMp4, IndexKeepsEverySampleInsideItsMdat) {
  const auto r = record(0, 3, 25);
  ASSERT_EQ(r->index.fragments().size(), 3u);
  const Fmp4TrackRun& v = r->index.fragments()[1].tracks[0];
  ASSERT_EQ(v.sample_list.size(), 25u);
  EXPECT_EQ(v.sample_list[0].size, 10u);
  EXPECT_EQ(v.sample_list[0].duration, 3600u);
  EXPECT_EQ(v.sample_list[0].flags & kNonSync, 0u);
  EXPECT_NE(v.sample_list[1].flags & kNonSync, 0u);
  EXPECT_EQ(r->bytes[v.sample_list[3].offset + 8], 25 + 3);  // frame 28's counter
  EXPECT_FALSE(r->index.tracks()[0].stsd.empty());
}

TEST(ProgressiveMp4, StartsAndEndsAtVideoKeyframes) {
  const auto r = record(0, 6, 50);  // keyframes at 0, 2, 4 s
  const double t0 = 1000;
  ProgressiveMp4Window w;
  w.from = t0 + 2.5;
  w.to = t0 + 3.5;
  const auto m = cut_progressive_mp4({file_of(*r, 0, t0)}, w);
  ASSERT_TRUE(m);
  EXPECT_DOUBLE_EQ(m->start, t0 + 2);
  EXPECT_NEAR(m->duration, 2.0, 1e-9);
  EXPECT_EQ(m->end, Mp4CutEnd::Window);
  ASSERT_EQ(m->samples.size(), 2u);
  EXPECT_EQ(m->samples[0], 50u);
  // Audio from 2.0 s (its first sample at or after) to before 4.0 s.
  uint32_t audio = 0;
  for (int a = 0; a < 400; ++a) {
    const double s = a * 1024.0 / 44100;
    audio += s >= 2.0 - 1e-3 && s < 4.0 - 1e-3;
  }
  EXPECT_NEAR(m->samples[1], audio, 1u);
  const auto stts = stbl_box(*m, 0, "stts");
  EXPECT_EQ(be32(&stts[4]), 1u);  // one run: 50 x 3600
  EXPECT_EQ(be32(&stts[8]), 50u);
  EXPECT_EQ(be32(&stts[12]), 3600u);
  const auto stss = stbl_box(*m, 0, "stss");
  ASSERT_EQ(be32(&stss[4]), 1u);
  EXPECT_EQ(be32(&stss[8]), 1u);
  EXPECT_TRUE(stbl_box(*m, 0, "ctts").empty());  // every offset 0
  EXPECT_TRUE(stbl_box(*m, 1, "stss").empty());  // audio: every sample syncs
  // The first chunk is at the start of the mdat payload, right after the head.
  EXPECT_EQ(be32(&stbl_box(*m, 0, "stco")[8]), m->head.size());
  const Bytes whole = whole_file(*m, {r.get()});
  EXPECT_EQ(whole.size(), m->size);
  const std::vector<int> numbers = video_numbers(*m, whole);
  ASSERT_EQ(numbers.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(numbers[i], 50 + i);
  // moov before mdat, the mdat's size is its payload's.
  const auto top = children(whole);
  EXPECT_EQ(top.count("moov"), 1u);
  EXPECT_EQ(top.at("mdat")[0].size(), m->size - m->head.size());
  EXPECT_EQ(m->head.size(), 8 + top.at("ftyp")[0].size() + 8 + top.at("moov")[0].size() + 8);
}

TEST(ProgressiveMp4, TheSameQueryGivesTheSameBytes) {
  const auto r = record(0, 4, 25);
  ProgressiveMp4Window w;
  w.from = 1001.2;
  const auto a = cut_progressive_mp4({file_of(*r, 0, 1000)}, w);
  const auto b = cut_progressive_mp4({file_of(*r, 0, 1000)}, w);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->head, b->head);
  EXPECT_EQ(a->size, b->size);
  EXPECT_EQ(a->end, Mp4CutEnd::Recorded);
  EXPECT_DOUBLE_EQ(a->start, 1001);
}

TEST(ProgressiveMp4, SpansTwoFilesWithTheSameSampleDescriptions) {
  const auto a = record(0, 4, 25), b = record(1, 4, 25);
  ProgressiveMp4Window w;
  w.from = 1003.5;
  w.to = 1005.5;
  const auto m = cut_progressive_mp4({file_of(*a, 0, 1000), file_of(*b, 1, 1004)}, w);
  ASSERT_TRUE(m);
  EXPECT_DOUBLE_EQ(m->start, 1003);
  EXPECT_NEAR(m->duration, 3.0, 1e-9);
  EXPECT_EQ(m->samples[0], 75u);
  const Bytes whole = whole_file(*m, {a.get(), b.get()});
  const std::vector<int> numbers = video_numbers(*m, whole);
  ASSERT_EQ(numbers.size(), 75u);
  EXPECT_EQ(numbers[0], 75);
  EXPECT_EQ(numbers[24], 99);
  EXPECT_EQ(numbers[25], 0);  // the second file's first frame
  EXPECT_EQ(numbers[74], 49);
  bool both = false;
  for (const Mp4ByteRun& r : m->runs) both = both || r.file == 1;
  EXPECT_TRUE(both);
  EXPECT_EQ(m->size, whole.size());
}

TEST(ProgressiveMp4, AChangedSampleDescriptionOrAGapEndsTheCut) {
  const auto a = record(0, 4, 25), b = record(1, 4, 25, true, 0x28);
  ProgressiveMp4Window w;
  w.from = 1003.5;
  w.to = 1006;
  auto m = cut_progressive_mp4({file_of(*a, 0, 1000), file_of(*b, 1, 1004)}, w);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->end, Mp4CutEnd::ConfigChange);
  EXPECT_EQ(m->samples[0], 25u);
  for (const Mp4ByteRun& r : m->runs) EXPECT_EQ(r.file, 0u);

  const auto c = record(1, 4, 25);
  m = cut_progressive_mp4({file_of(*a, 0, 1000), file_of(*c, 1, 1010)}, w);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->end, Mp4CutEnd::Gap);
  EXPECT_EQ(m->samples[0], 25u);
}

TEST(ProgressiveMp4, AFromInAGapStartsAtTheNextFile) {
  const auto a = record(0, 2, 25), b = record(1, 2, 25);
  ProgressiveMp4Window w;
  w.from = 1005;
  const auto m = cut_progressive_mp4({file_of(*a, 0, 1000), file_of(*b, 1, 1010)}, w);
  ASSERT_TRUE(m);
  EXPECT_DOUBLE_EQ(m->start, 1010);
  for (const Mp4ByteRun& r : m->runs) EXPECT_EQ(r.file, 1u);
  w.from = 1013;  // after everything
  EXPECT_FALSE(cut_progressive_mp4({file_of(*a, 0, 1000), file_of(*b, 1, 1010)}, w));
}

TEST(ProgressiveMp4, AudioOnlyCutsAtAnySample) {
  const auto r = record(0, 2, 25, false);
  ProgressiveMp4Window w;
  w.from = 1000.5;
  w.to = 1001.0;
  const auto m = cut_progressive_mp4({file_of(*r, 0, 1000)}, w);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->samples.size(), 1u);
  const double frame = 1024.0 / 44100;
  const int first = static_cast<int>(0.5 / frame);  // the last sample at or before 0.5 s
  EXPECT_NEAR(m->start, 1000 + first * frame, 1e-3);
  EXPECT_GE(m->duration, 0.5 - frame);
  EXPECT_LE(m->duration, 0.5 + frame);
}

TEST(ProgressiveMp4, AudioStartingAfterTheVideoGetsAnEmptyEdit) {
  const auto r = record(0, 3, 25);
  ProgressiveMp4Window w;
  w.from = 1001;  // the video keyframe at 1.000 s; audio sample 44 is the first after it
  const auto m = cut_progressive_mp4({file_of(*r, 0, 1000)}, w);
  ASSERT_TRUE(m);
  EXPECT_TRUE(box(m->head, {"moov", "trak", "edts"}, 0).empty());
  const auto elst = box(m->head, {"moov", "trak", "edts", "elst"}, 1);
  ASSERT_FALSE(elst.empty());
  EXPECT_EQ(be32(&elst[4]), 2u);
  // The muxer's audio clock is in ms: the first audio sample at or after 1 s is at 1021 ms.
  const double first_audio = 44 * 1024 * 1000 / 44100 / 1000.0;
  EXPECT_EQ(be64(&elst[8]), static_cast<uint64_t>(std::llround((first_audio - 1.0) * 1000)));
  EXPECT_EQ(be64(&elst[16]), UINT64_MAX);  // media_time -1: empty
}

TEST(ProgressiveMp4, Past4GiBChunkOffsetsAre64Bit) {
  Fmp4Track v;
  v.track_id = 1;
  v.timescale = 90000;
  v.video = true;
  v.stsd = {0, 0, 0, 0, 0, 0, 0, 0};
  Fmp4Fragment f;
  Fmp4TrackRun run;
  run.track_id = 1;
  for (uint64_t i = 0; i < 3; ++i) run.sample_list.push_back({100 + i * (3ull << 30), 3u << 30, 3600, 0, 0});
  run.samples = 3;
  f.tracks.push_back(run);
  const auto m = cut_progressive_mp4({ProgressiveMp4File{0, 1000, {v}, {f}}}, {});
  ASSERT_TRUE(m);
  EXPECT_TRUE(stbl_box(*m, 0, "stco").empty());
  const auto co64 = stbl_box(*m, 0, "co64");
  ASSERT_FALSE(co64.empty());
  EXPECT_EQ(be64(&co64[8]), m->head.size());
  EXPECT_EQ(m->size, m->head.size() + 9 * (1ull << 30));
  // §4.2: mdat with size 1 and a 64-bit largesize.
  const size_t mdat = m->head.size() - 16;
  EXPECT_EQ(be32(&m->head[mdat]), 1u);
  EXPECT_EQ(std::memcmp(&m->head[mdat + 4], "mdat", 4), 0);
  EXPECT_EQ(be64(&m->head[mdat + 8]), 16 + 9 * (1ull << 30));
}

TEST(ProgressiveMp4, AnotherTracksSampleWithinAMillisecondOfTheKeyframeIsOnItsSide) {
  // Keyframes at 0 and 1 s; audio frames of 1000 ticks, one 20 ticks (0.45 ms) before each
  // keyframe: the recorder's millisecond clock put them at it.
  Fmp4Track v{1, 90000, true, false, 0, 0, 0, {1}, 0, 0, 0x55C4};
  Fmp4Track a{2, 44100, false, true, 0, 0, 0, {2}, 0, 0, 0x55C4};
  Fmp4Fragment f;
  Fmp4TrackRun vr{1, 0, 0, 50, {}}, ar{2, 44100 - 20 - 44 * 1000, 0, 0, {}};
  for (uint64_t i = 0; i < 50; ++i) vr.sample_list.push_back({i * 10, 10, 3600, i % 25 ? kNonSync : 0, 0});
  for (uint64_t i = 0; i < 90; ++i) ar.sample_list.push_back({1000 + i * 10, 10, 1000, 0, 0});
  f.tracks = {vr, ar};
  ProgressiveMp4Window w;
  w.from = 1001.5;
  const auto m = cut_progressive_mp4({ProgressiveMp4File{0, 1000, {v, a}, {f}}}, w);
  ASSERT_TRUE(m);
  EXPECT_DOUBLE_EQ(m->start, 1001);
  ASSERT_EQ(m->samples.size(), 2u);
  EXPECT_EQ(m->samples[1], 90u - 44);  // from the frame 0.45 ms before the keyframe on
  EXPECT_TRUE(box(m->head, {"moov", "trak", "edts"}, 0).empty());
  EXPECT_TRUE(box(m->head, {"moov", "trak", "edts"}, 1).empty());
}
