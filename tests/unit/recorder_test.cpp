// media::Recorder with its RecordingFiles and a real record::FileWriter: what lands on disk for a
// published stream — every frame in exactly one file, files rotated at keyframes, fMP4 fragments
// per flush, FLV metadata rewritten — and what happens when the disk fails or falls behind.
#include "rill/media/recorder.h"

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

#include "codec_test_data.h"
#include "media_test_util.h"
#include "rill/core/byte_order.h"
#include "rill/protocol/flv_file.h"

namespace rill::media {
namespace {

namespace fs = std::filesystem;
using namespace testutil;
using Bytes = std::vector<uint8_t>;

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/rill-rec-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(path); }
};

Bytes slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

FramePtr video_header() {
  Bytes b = {0x17, 0, 0, 0, 0};
  b.insert(b.end(), testdata::kAvcRecord.begin(), testdata::kAvcRecord.end());
  return tag_frame(MediaType::Video, 0, bytes(b));
}
FramePtr audio_header() { return tag_frame(MediaType::Audio, 0, bytes({0xaf, 0x00, 0x12, 0x10})); }
FramePtr meta() {
  auto f = std::make_shared<MediaFrame>();
  f->type = MediaType::Data;
  f->metadata = true;
  f->payload = on_metadata(false);
  return f;
}

// A published stream: 25 fps video with a keyframe every second, AAC every 23 ms, in timestamp
// order (audio first at a tie), after metadata and both sequence headers.
struct Feed {
  std::vector<FramePtr> frames;
  uint64_t video = 0, audio = 0;
};
Feed stream(uint32_t ms, bool with_video = true, bool with_audio = true, size_t video_size = 200) {
  Feed f;
  f.frames.push_back(meta());
  if (with_video) f.frames.push_back(video_header());
  if (with_audio) f.frames.push_back(audio_header());
  uint32_t v = 0, a = 0;
  for (;;) {
    const uint32_t vt = v * 40, at = a * 23;
    const bool more_v = with_video && vt < ms, more_a = with_audio && at < ms;
    if (!more_v && !more_a) break;
    if (more_a && (!more_v || at <= vt)) {
      f.frames.push_back(tag_frame(MediaType::Audio, at, aac_raw(20)));
      ++a;
    } else {
      f.frames.push_back(tag_frame(MediaType::Video, vt,
                                   v % 25 == 0 ? avc_keyframe(video_size) : avc_inter(video_size / 2)));
      ++v;
    }
  }
  f.video = v;
  f.audio = a;
  return f;
}

// What a file holds: coded video and audio frames, whether its first video frame is a keyframe.
struct Contents {
  uint64_t video = 0, audio = 0, fragments = 0;
  bool starts_with_keyframe = false;
  double flv_duration = -1;
  double flv_filesize = -1;
};

Contents read_flv(const Bytes& file) {
  Contents c;
  protocol::FlvFileReader r;
  r.feed(file);
  bool first_video = true;
  while (auto t = r.next()) {
    if (t->type == protocol::kFlvTagScript) {
      protocol::Amf0Decoder d(t->body);
      d.skip();
      const protocol::Amf0Value m = d.decode();
      c.flv_duration = m.find_number("duration").value_or(-1);
      c.flv_filesize = m.find_number("filesize").value_or(-1);
    } else if (t->body.size() > 1 && t->body[1] == 1) {  // AVC NALU / AAC raw
      if (t->type == protocol::kFlvTagVideo) {
        if (first_video) c.starts_with_keyframe = (t->body[0] >> 4) == 1;
        first_video = false;
        ++c.video;
      } else {
        ++c.audio;
      }
    }
  }
  EXPECT_EQ(r.buffered(), 0u);
  return c;
}

// ISO/IEC 14496-12: ftyp, moov, then moof + mdat pairs; samples counted from each traf's trun.
Contents read_mp4(const Bytes& file) {
  Contents c;
  std::vector<std::string> top;
  bool first_video = true;
  // Track 1 is video when the moov has a video handler ('vide'), else audio.
  const bool has_video =
      std::search(file.begin(), file.end(), std::begin("vide"), std::end("vide") - 1) != file.end();
  for (size_t at = 0; at + 8 <= file.size();) {
    const uint32_t size = load_be32(file.data() + at);
    EXPECT_GE(size, 8u);
    if (size < 8 || at + size > file.size()) break;
    const std::string type(reinterpret_cast<const char*>(file.data() + at + 4), 4);
    top.push_back(type);
    if (type == "moof") {
      ++c.fragments;
      for (size_t p = at + 8; p + 8 <= at + size;) {
        const uint32_t bs = load_be32(file.data() + p);
        if (std::string(reinterpret_cast<const char*>(file.data() + p + 4), 4) == "traf") {
          uint32_t track = 0;
          for (size_t q = p + 8; q + 8 <= p + bs;) {
            const uint32_t qs = load_be32(file.data() + q);
            const std::string qt(reinterpret_cast<const char*>(file.data() + q + 4), 4);
            if (qt == "tfhd") track = load_be32(file.data() + q + 12);
            if (qt == "trun") {
              const uint32_t n = load_be32(file.data() + q + 12);
              if (track == 1 && has_video) {
                if (first_video) {
                  // First sample's flags (trun: data offset, then duration, size, flags, cto per sample).
                  const uint32_t flags = load_be32(file.data() + q + 20 + 8);
                  c.starts_with_keyframe = (flags & 0x00010000) == 0;  // sample_is_non_sync_sample clear
                  first_video = false;
                }
                c.video += n;
              } else {
                c.audio += n;
              }
            }
            q += qs;
          }
        }
        p += bs;
      }
    }
    at += size;
  }
  EXPECT_GE(top.size(), 2u);
  if (top.size() >= 2) {
    EXPECT_EQ(top[0], "ftyp");
    EXPECT_EQ(top[1], "moov");
  }
  return c;
}

struct Rig {
  TempDir dir;
  config::RecordConfig cfg;
  std::shared_ptr<spdlog::logger> log = std::make_shared<spdlog::logger>("recorder-test");
  std::atomic<int> tick{0};
  std::unique_ptr<record::FileWriter> writer;
  std::unique_ptr<Recorder> rec;

  // `round`: the writer's (FileWriterOptions::round); 0, each command carried out as it comes,
  // keeps the flushes at `flush` exactly, which the tests' arithmetic counts on.
  explicit Rig(config::RecordFormat format, record::FileWriterOptions o = {},
               std::chrono::milliseconds round = std::chrono::milliseconds(0)) {
    o.round = round;
    cfg.mode = config::RecordMode::All;
    cfg.format = format;
    cfg.path = dir.path + "/{app}/{name}-{start:%s}";
    o.clock = [this] { return std::time_t{1'700'000'000} + tick++; };  // a new second per file
    writer = std::make_unique<record::FileWriter>(o);
    rec = std::make_unique<Recorder>(*writer, StreamKey{"live", "cam"}, cfg, *log);
  }
  // `paced`: the writer catches up after every frame, as a disk as fast as the stream would.
  void feed(const std::vector<FramePtr>& frames, size_t from = 0, size_t to = SIZE_MAX, bool paced = false) {
    for (size_t i = from; i < std::min(to, frames.size()); ++i) {
      rec->on_frame(frames[i]);
      if (paced) writer->wait_idle();
    }
  }
  std::vector<std::string> finish() {
    rec->stop();
    writer->wait_idle();
    return files_in(dir.path);
  }
  Contents read(const std::string& path) const {
    return cfg.format == config::RecordFormat::Flv ? read_flv(slurp(path)) : read_mp4(slurp(path));
  }
};

class RecorderFormats : public ::testing::TestWithParam<config::RecordFormat> {};

TEST_P(RecorderFormats, OneFilePerPublishHoldsEveryFrame) {
  Rig rig(GetParam());
  const Feed f = stream(5000);
  rig.feed(f.frames);
  const auto files = rig.finish();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0], rig.dir.path + "/live/cam-1700000000" +
                          (GetParam() == config::RecordFormat::Flv ? ".flv" : ".mp4"));
  const Contents c = rig.read(files[0]);
  EXPECT_EQ(c.video, f.video);
  EXPECT_EQ(c.audio, f.audio);
  EXPECT_TRUE(c.starts_with_keyframe);
  EXPECT_EQ(rig.rec->frames_written(), f.video + f.audio);
  EXPECT_EQ(rig.rec->state(), Recorder::State::Recording);
  if (GetParam() == config::RecordFormat::Flv) {
    EXPECT_NEAR(c.flv_duration, 5.014, 1e-9);  // the last audio frame, at 4991 ms, + 23 ms
    EXPECT_EQ(c.flv_filesize, static_cast<double>(fs::file_size(files[0])));
  } else {
    EXPECT_EQ(c.fragments, 5u);  // one per second of flush
  }
}

// A writer that carries chunks out in rounds gets them that much before `flush`, so that they
// still reach the file within it: 5 s with `flush: 1s` and 100 ms rounds are cut every 900 ms
// (each cut before the first video frame due, at 40 ms steps: 920, 1840, 2760, 3680, 4600 ms).
TEST_P(RecorderFormats, FlushesComeTheWritersRoundEarly) {
  Rig rig(GetParam(), {}, std::chrono::milliseconds(100));
  const Feed f = stream(5000);
  rig.feed(f.frames);
  const auto files = rig.finish();
  ASSERT_EQ(files.size(), 1u);
  const Contents c = rig.read(files[0]);
  EXPECT_EQ(c.video, f.video);
  EXPECT_EQ(c.audio, f.audio);
  if (GetParam() == config::RecordFormat::Fmp4) {
    EXPECT_EQ(c.fragments, 6u);  // 5 cuts and the close's
  }
}

TEST_P(RecorderFormats, RotationAtKeyframesLosesAndDoublesNothing) {
  Rig rig(GetParam());
  rig.cfg.segment = std::chrono::seconds(2);
  const Feed f = stream(7000);
  rig.feed(f.frames);
  const auto files = rig.finish();
  ASSERT_EQ(files.size(), 4u);  // [0, 2) [2, 4) [4, 6) [6, 7)
  Contents sum;
  for (const auto& path : files) {
    const Contents c = rig.read(path);
    EXPECT_TRUE(c.starts_with_keyframe) << path;
    EXPECT_EQ(c.video, path == files.back() ? 25u : 50u) << path;
    sum.video += c.video;
    sum.audio += c.audio;
    if (GetParam() == config::RecordFormat::Flv && path != files.back()) {
      EXPECT_NEAR(c.flv_duration, 2.0, 0.025);
    }
  }
  EXPECT_EQ(sum.video, f.video);
  EXPECT_EQ(sum.audio, f.audio);
  EXPECT_EQ(rig.rec->files_started(), 4u);
}

TEST_P(RecorderFormats, MaxSizeRotatesAtTheNextKeyframe) {
  Rig rig(GetParam());
  rig.cfg.max_size = 100 * 1000;
  const Feed f = stream(8000, true, true, /*video_size=*/4000);  // ~55 KB a second
  rig.feed(f.frames);
  const auto files = rig.finish();
  ASSERT_GE(files.size(), 3u);
  Contents sum;
  for (const auto& path : files) {
    const Contents c = rig.read(path);
    EXPECT_TRUE(c.starts_with_keyframe) << path;
    if (path != files.back()) {
      EXPECT_GE(fs::file_size(path), 100u * 1000) << path;
      EXPECT_LT(fs::file_size(path), 100u * 1000 + 60 * 1000) << path;  // cut within a second past it
    }
    sum.video += c.video;
    sum.audio += c.audio;
  }
  EXPECT_EQ(sum.video, f.video);
  EXPECT_EQ(sum.audio, f.audio);
}

TEST_P(RecorderFormats, ModeVideoRecordsOneTrack) {
  Rig rig(GetParam());
  rig.cfg.mode = config::RecordMode::Video;
  const Feed f = stream(3000);
  rig.feed(f.frames);
  const auto files = rig.finish();
  ASSERT_EQ(files.size(), 1u);
  const Contents c = rig.read(files[0]);
  EXPECT_EQ(c.video, f.video);
  EXPECT_EQ(c.audio, 0u);
}

TEST_P(RecorderFormats, AudioOnlyStreamKeepsTheProbedAudio) {
  Rig rig(GetParam());
  const Feed f = stream(3000, /*with_video=*/false);
  rig.feed(f.frames);
  const auto files = rig.finish();
  ASSERT_EQ(files.size(), 1u);
  const Contents c = rig.read(files[0]);
  EXPECT_EQ(c.video, 0u);
  EXPECT_EQ(c.audio, f.audio);  // the second of audio held while waiting for video is in the file
}

TEST_P(RecorderFormats, UnwritablePathFailsWithTheReasonAndTheStreamGoesOn) {
  Rig rig(GetParam());
  std::ofstream(rig.dir.path + "/live") << "a file where a directory is expected";
  const Feed f = stream(3000);
  rig.feed(f.frames, 0, 10);
  rig.writer->wait_idle();
  rig.feed(f.frames, 10);
  EXPECT_EQ(rig.rec->state(), Recorder::State::Failed);
  EXPECT_EQ(rig.rec->failure().rfind(rig.dir.path + "/live/cam-", 0), 0u) << rig.rec->failure();
  EXPECT_NE(rig.rec->failure().find(": mkdir: Not a directory"), std::string::npos) << rig.rec->failure();
  rig.finish();
  EXPECT_EQ(files_in(rig.dir.path).size(), 1u);  // the stray file only
}

TEST_P(RecorderFormats, FullQueueStopsTheFileAndRecordingResumesAtAKeyframe) {
  std::atomic<bool> hold{false};
  record::FileWriterOptions o;
  // A second of this stream (~135 KB) fits the queue, two do not; an FLV header (~74 KB) does.
  o.max_queue_bytes = 200 * 1024;
  o.before_command = [&] {
    while (hold.load()) ::usleep(500);
  };
  Rig rig(GetParam(), o);
  const Feed f = stream(9000, true, true, /*video_size=*/10000);
  // Index of the first frame at or after `ms` (frames are in timestamp order after 3 headers).
  const auto at = [&](uint32_t ms) {
    size_t i = 3;
    while (i < f.frames.size() && f.frames[i]->timestamp < ms) ++i;
    return i;
  };
  rig.feed(f.frames, 0, at(2000), true);
  hold = true;  // the disk stops answering: [1, 2 s) is queued at 2 s, [2, 3 s) no longer fits at 3 s
  rig.feed(f.frames, at(2000), at(3500));
  EXPECT_EQ(rig.rec->state(), Recorder::State::Failed);
  EXPECT_NE(rig.rec->failure().find("the write queue is full"), std::string::npos) << rig.rec->failure();
  hold = false;  // it catches up
  rig.writer->wait_idle();
  rig.feed(f.frames, at(3500), SIZE_MAX, true);             // a new file at the keyframe at 4 s
  EXPECT_EQ(rig.rec->state(), Recorder::State::Recording);  // the new file was written: the failure is over
  EXPECT_EQ(rig.rec->failure(), "");
  const auto files = rig.finish();
  ASSERT_EQ(files.size(), 2u);
  uint64_t video = 0;
  for (const auto& path : files) {
    const Contents c = rig.read(path);  // both files read to their end
    EXPECT_TRUE(c.starts_with_keyframe) << path;
    if (GetParam() == config::RecordFormat::Flv) {
      EXPECT_EQ(c.flv_filesize, static_cast<double>(fs::file_size(path)));
    }
    video += c.video;
  }
  EXPECT_EQ(video, 25u * 2 + 25u * 5);  // [0, 2 s) and, from the retry, [4 s, 9 s)
  EXPECT_LT(video, f.video);            // what the full queue refused is missing
}

TEST_P(RecorderFormats, DiskErrorMidFileLeavesAFileThatReadsToItsEnd) {
  Rig rig(GetParam());
  const Feed f = stream(8000, true, true, /*video_size=*/4000);  // ~60 KB a second
  const auto at = [&](uint32_t ms) {
    size_t i = 3;
    while (i < f.frames.size() && f.frames[i]->timestamp < ms) ++i;
    return i;
  };
  rig.feed(f.frames, 0, at(1500), true);
  // The file may not grow by more than 30 KB any more: the chunk handed at 2 s (~60 KB) fails
  // with EFBIG half way through.
  const auto first = files_in(rig.dir.path);
  ASSERT_EQ(first.size(), 1u);
  const auto size_limit = fs::file_size(first[0]) + 30 * 1000;
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  rlimit limit = old;
  limit.rlim_cur = size_limit;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  rig.feed(f.frames, at(1500), at(2500), true);
  ::setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_EQ(rig.rec->state(), Recorder::State::Failed);
  EXPECT_NE(rig.rec->failure().find(": write: File too large"), std::string::npos) << rig.rec->failure();
  rig.feed(f.frames, at(2500), SIZE_MAX, true);  // room again: a new file at the keyframe at 3 s
  EXPECT_EQ(rig.rec->state(), Recorder::State::Recording);
  const auto files = rig.finish();
  ASSERT_EQ(files.size(), 2u);
  EXPECT_LT(fs::file_size(files[0]), size_limit);  // cut back to its last whole chunk
  for (const auto& path : files) {
    const Contents c = rig.read(path);  // whole tags / fragments up to the end
    EXPECT_TRUE(c.starts_with_keyframe) << path;
    EXPECT_GT(c.video, 0u) << path;
  }
}

INSTANTIATE_TEST_SUITE_P(, RecorderFormats,
                         ::testing::Values(config::RecordFormat::Fmp4, config::RecordFormat::Flv),
                         [](const auto& info) {
                           return info.param == config::RecordFormat::Flv ? "Flv" : "Fmp4";
                         });

}  // namespace
}  // namespace rill::media

namespace rill::media {
namespace {

// mode manual: nothing until control(true), a file from the next keyframe, closed by
// control(false) with a note that says so; each close reaches the writer's on_closed.
TEST(RecorderControl, ManualRecordsBetweenStartAndStopAndNotesTheClose) {
  std::mutex mu;
  std::vector<record::RecordFilePtr> closed;
  record::FileWriterOptions o;
  o.on_closed = [&](record::RecordFilePtr f) {
    std::lock_guard lock(mu);
    closed.push_back(std::move(f));
  };
  Rig rig(config::RecordFormat::Fmp4, o);
  rig.cfg.mode = config::RecordMode::Manual;
  rig.rec = std::make_unique<Recorder>(*rig.writer, StreamKey{"live", "cam"}, rig.cfg, *rig.log);
  EXPECT_EQ(rig.rec->state(), Recorder::State::Stopped);
  const Feed f = stream(5000);
  const auto at = [&](uint32_t ms) {  // the first coded frame at or after ms
    return static_cast<size_t>(std::find_if(f.frames.begin() + 3, f.frames.end(),
                                            [ms](const FramePtr& p) { return p->timestamp >= ms; }) -
                               f.frames.begin());
  };
  rig.feed(f.frames, 0, at(1500));
  EXPECT_EQ(rig.rec->control(true), Recorder::State::Waiting);
  rig.feed(f.frames, at(1500), at(3500));  // a file from the keyframe at 2000 ms
  EXPECT_EQ(rig.rec->state(), Recorder::State::Recording);
  EXPECT_EQ(rig.rec->status().started, std::time_t{1'700'000'000});
  EXPECT_EQ(rig.rec->control(false), Recorder::State::Stopped);
  EXPECT_TRUE(rig.rec->status().path.empty());
  rig.feed(f.frames, at(3500));
  const auto files = rig.finish();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(rig.read(files[0]).video, 38u);  // 2000 ms to 3480 ms at 25 fps
  std::lock_guard lock(mu);
  ASSERT_EQ(closed.size(), 1u);
  const record::RecordCloseNote& n = closed[0]->note();
  EXPECT_EQ(n.app, "live");
  EXPECT_EQ(n.name, "cam");
  EXPECT_EQ(n.reason, "stopped");
  EXPECT_EQ(n.started, std::time_t{1'700'000'000});
  EXPECT_NEAR(n.duration_ms, 1540, 60);  // from the audio frame before the keyframe (1978 ms)
  EXPECT_EQ(closed[0]->path(), files[0]);
  EXPECT_EQ(closed[0]->written(), fs::file_size(files[0]));
  EXPECT_EQ(rig.writer->bytes_written(), fs::file_size(files[0]));
}

}  // namespace
}  // namespace rill::media
