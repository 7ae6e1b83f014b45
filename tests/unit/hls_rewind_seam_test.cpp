// hls.rewind's seam (docs/hls.md "Rewind"): a rewound playlist is served from the recording up to
// some segment and from memory after it, so a segment's recorded run and its live copy must carry
// the same samples, and any such mix must give each frame exactly once with strictly increasing
// decode times. Exercised where it is hardest: an aligned rendition (hls.variants), cut by the
// keyframe's presentation time, with B-frames (pts != dts), the recorder's own flushes and a
// rotation inside segments, and a publisher's loop seam (ffmpeg -stream_loop: audio overlapping
// by a frame, video stepping 94 ms once).
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "media_test_util.h"
#include "rill/core/byte_order.h"
#include "rill/media/hls_segmenter.h"
#include "rill/media/hls_store.h"
#include "rill/media/recorder.h"
#include "rill/media/rewind_link.h"
#include "rill/media/testing/fake_timer_queue.h"

namespace rill::media {
namespace {

using namespace std::chrono_literals;
using namespace testutil;
using Bytes = std::vector<uint8_t>;

// One sample of a moof's trun: its track, decode time (tfdt + the durations before it), size and
// composition offset, in the track's timescale.
struct Sample {
  uint32_t track = 0;
  uint64_t dts = 0;
  uint32_t size = 0;
  int32_t cts = 0;
  bool operator==(const Sample&) const = default;
};
std::ostream& operator<<(std::ostream& o, const Sample& s) {
  return o << "{track " << s.track << " dts " << s.dts << " size " << s.size << " cts " << s.cts << "}";
}

// Track by track (a recorded run may hold several fragments, each with video then audio).
std::vector<Sample> by_track(std::vector<Sample> v) {
  std::stable_sort(v.begin(), v.end(), [](const Sample& a, const Sample& b) { return a.track < b.track; });
  return v;
}

std::string box_type(std::span<const uint8_t> b, size_t at) {
  return std::string(reinterpret_cast<const char*>(b.data() + at + 4), 4);
}

// The samples of one traf box [at, end): tfhd, tfdt, trun (ISO/IEC 14496-12 §8.8.7, 8.8.12, 8.8.8).
void traf_samples(std::span<const uint8_t> b, size_t at, size_t end, std::vector<Sample>& out) {
  uint32_t track = 0, default_duration = 0, default_size = 0;
  uint64_t dts = 0;
  for (size_t q = at + 8; q + 8 <= end;) {
    const uint32_t qs = load_be32(b.data() + q);
    const std::string t = box_type(b, q);
    const uint32_t flags = load_be32(b.data() + q + 8) & 0xffffff;
    const uint8_t* p = b.data() + q + 12;
    if (t == "tfhd") {
      track = load_be32(p);
      p += 4;
      if (flags & 0x1) p += 8;  // base_data_offset
      if (flags & 0x2) p += 4;  // sample_description_index
      if (flags & 0x8) default_duration = load_be32(p), p += 4;
      if (flags & 0x10) default_size = load_be32(p);
    } else if (t == "tfdt") {
      dts = b[q + 8] == 1 ? (uint64_t{load_be32(p)} << 32) | load_be32(p + 4) : load_be32(p);
    } else if (t == "trun") {
      const uint32_t n = load_be32(p);
      p += 4;
      if (flags & 0x1) p += 4;  // data_offset
      if (flags & 0x4) p += 4;  // first_sample_flags
      for (uint32_t i = 0; i < n; ++i) {
        Sample s{track, dts, default_size, 0};
        uint32_t duration = default_duration;
        if (flags & 0x100) duration = load_be32(p), p += 4;
        if (flags & 0x200) s.size = load_be32(p), p += 4;
        if (flags & 0x400) p += 4;
        if (flags & 0x800) s.cts = static_cast<int32_t>(load_be32(p)), p += 4;
        out.push_back(s);
        dts += duration;
      }
    }
    q += qs;
  }
}

// Every sample of every moof in `b` (moof + mdat pairs), in order.
std::vector<Sample> samples_of(std::span<const uint8_t> b) {
  std::vector<Sample> out;
  for (size_t at = 0; at + 8 <= b.size();) {
    const uint32_t size = load_be32(b.data() + at);
    if (size < 8 || at + size > b.size()) break;
    if (box_type(b, at) == "moof") {
      for (size_t p = at + 8; p + 8 <= at + size;) {
        const uint32_t ps = load_be32(b.data() + p);
        if (ps < 8) break;
        if (box_type(b, p) == "traf") traf_samples(b, p, p + ps, out);
        p += ps;
      }
    }
    at += size;
  }
  return out;
}

Bytes file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes{std::istreambuf_iterator<char>(in), {}};
}

// Frames in publish (decode) order: `loops` times the same media, each loop offset by the
// previous loop's last audio timestamp + 1 ms, as ffmpeg -stream_loop -c copy does. The media:
// 25 fps H.264 with B-frames (GOP of 10 in presentation order: I0 P3 B1 B2 P6 B4 B5 P9 B7 B8, so
// pts = dts + 40, 80 or 160), 44.1 kHz AAC; interleaved by timestamp. Each frame's sample size is
// its own, so that the samples say which frame they are.
std::vector<FramePtr> looped_b_frame_media(uint32_t base, int loops) {
  static const int kPresented[10] = {0, 3, 1, 2, 6, 4, 5, 9, 7, 8};
  constexpr int kVideo = 120;  // 4.8 s
  std::vector<FramePtr> out = {tag_frame(MediaType::Video, base, avc_seq_header()),
                               tag_frame(MediaType::Audio, base, aac_seq_header())};
  size_t video_size = 1000, audio_size = 20;
  uint32_t offset = base;
  for (int loop = 0; loop < loops; ++loop) {
    int v = 0, a = 0;
    uint32_t last_audio = 0;
    for (;;) {
      const uint32_t vt = 40 * v, at = static_cast<uint32_t>(a * 1024 * 1000 / 44100);
      const bool video_left = v < kVideo, audio_left = at < 40 * kVideo + 60;
      if (!video_left && !audio_left) break;
      if (audio_left && (!video_left || at <= vt)) {
        out.push_back(tag_frame(MediaType::Audio, offset + at, aac_raw(audio_size++)));
        last_audio = at;
        ++a;
        continue;
      }
      const int gop = v / 10, p = gop * 10 + kPresented[v % 10];
      const int32_t cts = 80 + 40 * p - static_cast<int32_t>(vt);
      out.push_back(tag_frame(MediaType::Video, offset + vt,
                              v % 10 == 0 ? avc_keyframe(video_size++, cts) : avc_inter(video_size++, cts)));
      ++v;
    }
    offset += last_audio + 1;
  }
  return out;
}

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/rill-seam-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(HlsRewindSeam, RecordedRunsAndLiveSegmentsCarryEachFrameOnceInDecodeOrder) {
  TempDir dir;
  auto log = std::make_shared<spdlog::logger>("seam", std::make_shared<spdlog::sinks::null_sink_st>());
  FakeTimerQueue timers;
  HlsStore store(timers, *log);
  const StreamKey key{"live", "cam_hi"};
  config::HlsConfig hls;
  hls.enabled = true;
  hls.fragment = 400ms;
  hls.window = 40;  // every live copy stays in memory, to be compared with its recorded run
  hls.container = config::HlsContainer::Fmp4;
  hls.rewind = 60000ms;
  hls.variant_suffixes = {"_hi", "_lo"};  // cam_hi: cut by the group's clock, at presentation times
  config::RecordConfig rec_cfg;
  rec_cfg.mode = config::RecordMode::All;
  rec_cfg.path = dir.path + "/{app}/{name}-{start:%s}";
  rec_cfg.flush = 300ms;     // fragments inside a segment
  rec_cfg.segment = 3000ms;  // and a rotation, at a segment boundary
  record::FileWriter writer(record::FileWriterOptions{});
  HlsSegmenter seg(store, key, hls, *log);
  Recorder rec(writer, key, rec_cfg, *log);
  auto link = std::make_shared<RewindLink>(store, key);
  seg.set_rewind(link);
  rec.follow_segments(link);
  // Keyframes presented at 5200 + 400 k: on the group's slots, decoded 80 ms before them.
  std::map<uint32_t, FramePtr> by_size;
  std::map<bool, std::vector<uint32_t>> published;  // per kind (video: true), the coded frames' sizes
  for (const FramePtr& f : looped_b_frame_media(5120, 2)) {
    ASSERT_NE(f, nullptr);
    if (f->coded) {
      const auto size = static_cast<uint32_t>(f->data().size());
      ASSERT_TRUE(by_size.emplace(size, f).second);
      published[f->type == MediaType::Video].push_back(size);
    }
    seg.on_frame(f);
    rec.on_frame(f);
    writer.wait_idle();
  }
  const HlsStreamState* st = store.find(key);
  ASSERT_NE(st, nullptr);
  const auto history = st->rewind_view();
  ASSERT_GE(history.size(), 18u);
  const uint64_t first = history.front().sequence, last_recorded = history.back().sequence;
  // Recorded run and live copy of each segment: the same samples.
  std::map<uint64_t, std::vector<Sample>> recorded, live;
  std::set<std::string> files;
  for (const auto& h : history) {
    ASSERT_TRUE(h.path);
    files.insert(*h.path);
    const Bytes file = file_bytes(*h.path);
    ASSERT_LE(h.offset + h.length, file.size());
    recorded[h.sequence] = samples_of(std::span<const uint8_t>(file).subspan(h.offset, h.length));
    const HlsSegment* l = st->segment(h.sequence);
    ASSERT_NE(l, nullptr) << h.sequence;
    live[h.sequence] = samples_of(l->data.span());
    EXPECT_EQ(by_track(recorded[h.sequence]), by_track(live[h.sequence])) << "segment " << h.sequence;
  }
  EXPECT_GE(files.size(), 2u) << "rotated";
  for (uint64_t s = last_recorded + 1; const HlsSegment* l = st->segment(s); ++s)
    live[s] = samples_of(l->data.span());
  // Served from the recording up to `seam`, from memory after it: each frame once, in publish
  // order, at its own decode time (video: the stream's timeline in 1/90000), strictly increasing.
  for (uint64_t seam = first - 1; seam <= last_recorded; ++seam) {
    std::map<uint32_t, uint64_t> last_dts;
    std::map<bool, std::vector<uint32_t>> served;
    for (const auto& [s, samples] : live) {
      for (const Sample& x : s <= seam ? recorded[s] : samples) {
        const auto prev = last_dts.find(x.track);
        ASSERT_TRUE(prev == last_dts.end() || x.dts > prev->second)
            << "seam after " << seam << ": track " << x.track << " dts " << x.dts << " in segment " << s;
        last_dts[x.track] = x.dts;
        const auto f = by_size.find(x.size);
        ASSERT_NE(f, by_size.end()) << x.size;
        const bool video = f->second->type == MediaType::Video;
        served[video].push_back(x.size);
        if (video) {
          ASSERT_EQ(x.dts, uint64_t{f->second->timestamp} * 90) << "segment " << s;
          ASSERT_EQ(x.cts, f->second->composition_time * 90) << "segment " << s;
        }
      }
    }
    // Per kind: a run of the published frames without a gap or a repeat.
    for (const bool video : {true, false}) {
      const std::vector<uint32_t>& got = served[video];
      const std::vector<uint32_t>& all = published[video];
      ASSERT_FALSE(got.empty());
      const auto from = std::find(all.begin(), all.end(), got.front());
      ASSERT_LE(got.size(), static_cast<size_t>(all.end() - from));
      EXPECT_TRUE(std::equal(got.begin(), got.end(), from))
          << "seam after " << seam << (video ? ": video" : ": audio");
    }
  }
  rec.stop();
  writer.wait_idle();
}

}  // namespace
}  // namespace rill::media
