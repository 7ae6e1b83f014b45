// record::RecordingCatalog: the recordings of an app from a scan of its root (files made here
// with the recorder's fMP4 muxer), their ids, names, starts and states; api::parse_rfc3339.
#include "rill/record/recording_catalog.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "codec_test_data.h"
#include "rill/api/api_recordings.h"
#include "rill/protocol/fmp4_muxer.h"

namespace rill::record {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/rill-cat-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(path); }
};

// `seconds` fragments of 1 s of video, written to `path` with its mtime at `mtime`.
void write_fmp4(const std::string& path, int seconds, std::time_t mtime) {
  protocol::Fmp4Tracks t;
  t.has_video = true;
  t.video_record = rill::testdata::kAvcRecord;
  protocol::Fmp4Muxer mux(t);
  Bytes out = mux.init_segment();
  const Bytes idr = {0, 0, 0, 2, 0x65, 0x88};
  for (int f = 0; f < seconds; ++f) {
    for (int i = 0; i < 25; ++i) mux.add({true, f * 1000 + i * 40, 0, i == 0, idr});
    mux.flush((f + 1) * 1000, out);
  }
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size()));
  const struct timespec times[2] = {{0, UTIME_OMIT}, {mtime, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

TEST(RecordingCatalog, NamesFromThePathTemplate) {
  const std::string tmpl = "/rec/{app}/{name}/{start:%Y-%m-%d_%H-%M-%S}";
  EXPECT_EQ(recording_stream_name(tmpl, "live", "/rec/live/cam/2026-12-05_10-00-00.mp4"), "cam");
  EXPECT_EQ(recording_stream_name(tmpl, "live", "/rec/live/cam/2026-12-05_10-00-00-2.flv"), "cam");
  EXPECT_EQ(recording_stream_name("/rec/{app}/{name}-{start}", "a.b", "/rec/a.b/x-y-20261205.mp4"), "x");
  EXPECT_EQ(recording_stream_name(tmpl, "live", "/rec/other/cam/x.mp4"), "");
}

TEST(RecordingCatalog, IdsAreStableHexAndDiffer) {
  EXPECT_EQ(recording_id("live", "cam/a.mp4"), recording_id("live", "cam/a.mp4"));
  EXPECT_NE(recording_id("live", "cam/a.mp4"), recording_id("live", "cam/b.mp4"));
  EXPECT_EQ(recording_id("live", "cam/a.mp4").find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(recording_id("live", "cam/a.mp4").size(), 16u);
}

TEST(RecordingCatalog, ListsOldestFirstWithStartDurationAndState) {
  TempDir d;
  RecordingCatalog::App app{{"live", d.path + "/live"}, d.path + "/{app}/{name}/{start}"};
  write_fmp4(d.path + "/live/cam/b.mp4", 3, 1'700'000'100);
  write_fmp4(d.path + "/live/cam/a.mp4", 2, 1'700'000'000);
  write_fmp4(d.path + "/live/other/c.mp4", 1, 1'700'000'200);
  std::ofstream(d.path + "/live/cam/notes.txt") << "not a recording";
  const int fd = ::open((d.path + "/live/other/c.mp4").c_str(), O_RDONLY);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);

  RecordingCatalog cat;
  std::string error;
  const auto list = cat.list(app, error);
  EXPECT_EQ(error, "");
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].path, d.path + "/live/cam/a.mp4");
  EXPECT_EQ(list[0].name, "cam");
  EXPECT_EQ(list[0].app, "live");
  EXPECT_DOUBLE_EQ(list[0].duration, 2.0);
  EXPECT_DOUBLE_EQ(list[0].start, 1'700'000'000 - 2.0);
  EXPECT_FALSE(list[0].recording);
  EXPECT_EQ(list[1].path, d.path + "/live/cam/b.mp4");
  EXPECT_EQ(list[2].name, "other");
  EXPECT_TRUE(list[2].recording);
  EXPECT_EQ(list[0].id, recording_id("live", "cam/a.mp4"));

  ASSERT_TRUE(cat.find({app}, list[1].id));
  EXPECT_EQ(cat.find({app}, list[1].id)->path, list[1].path);
  EXPECT_FALSE(cat.find({app}, "0123456789abcdef"));

  std::string why;
  EXPECT_EQ(remove_recording(list[2].path, why), RemoveResult::BeingWritten);
  ::close(fd);
  EXPECT_EQ(remove_recording(list[2].path, why), RemoveResult::Removed);
  EXPECT_EQ(remove_recording(list[2].path, why), RemoveResult::Gone);
  EXPECT_EQ(cat.list(app, error).size(), 2u);
}

TEST(RecordingCatalog, CachedDurationsFollowChanges) {
  TempDir d;
  RecordingCatalog::App app{{"live", d.path}, d.path + "/{name}"};
  RecordingCatalog cat(1);  // a cache of one file: cleared when full
  write_fmp4(d.path + "/a.mp4", 2, 1'700'000'000);
  std::string error;
  EXPECT_DOUBLE_EQ(cat.list(app, error)[0].duration, 2.0);
  write_fmp4(d.path + "/a.mp4", 4, 1'700'000'050);  // a new size and mtime: measured again
  write_fmp4(d.path + "/b.mp4", 1, 1'700'000'060);
  const auto list = cat.list(app, error);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_DOUBLE_EQ(list[0].duration, 4.0);
  EXPECT_DOUBLE_EQ(list[1].duration, 1.0);
}

// lookup(): from the index of the last scan, rescanned when the writer noted a change, when a file
// was deleted here, past kIndexTtlMs, or on a miss past kMissRescanMs (a fake clock drives it).
TEST(RecordingCatalog, LookupAnswersFromTheIndexUntilItIsOutOfDate) {
  TempDir d;
  const std::vector<RecordingCatalog::App> apps{{{"live", d.path}, d.path + "/{name}-{start}"}};
  RecordingCatalog cat;
  auto changes = std::make_shared<RecordingChanges>();
  cat.follow(changes);
  int64_t now = 1000;
  cat.set_clock([&now] { return now; });
  const auto id = [](const std::string& file) { return recording_id("live", file); };
  write_fmp4(d.path + "/cam-a.mp4", 1, 1'700'000'000);
  write_fmp4(d.path + "/cam-b.mp4", 1, 1'700'000'010);
  const auto a = cat.lookup(apps, id("cam-a.mp4"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->path, d.path + "/cam-a.mp4");
  EXPECT_EQ(a->name, "cam");
  EXPECT_FALSE(a->recording);
  // A file made by someone else: not seen by a miss within kMissRescanMs of the scan (no scan
  // per unknown id), then seen.
  write_fmp4(d.path + "/cam-c.mp4", 1, 1'700'000'020);
  EXPECT_FALSE(cat.lookup(apps, id("cam-c.mp4")));
  now += RecordingCatalog::kMissRescanMs;
  EXPECT_TRUE(cat.lookup(apps, id("cam-c.mp4")));
  // The writer's lock is read at each hit, not taken from the index.
  const int fd = ::open((d.path + "/cam-c.mp4").c_str(), O_RDONLY);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  EXPECT_TRUE(cat.lookup(apps, id("cam-c.mp4"))->recording);
  ::close(fd);
  EXPECT_FALSE(cat.lookup(apps, id("cam-c.mp4"))->recording);
  // Deleted by someone else: a hit until the index is out of date (its reader finds ENOENT).
  fs::remove(d.path + "/cam-a.mp4");
  EXPECT_TRUE(cat.lookup(apps, id("cam-a.mp4")));
  changes->note();  // this worker's writer opened or closed a file: scanned again at once
  EXPECT_FALSE(cat.lookup(apps, id("cam-a.mp4")));
  write_fmp4(d.path + "/cam-d.mp4", 1, 1'700'000'030);
  EXPECT_FALSE(cat.lookup(apps, id("cam-d.mp4")));
  cat.invalidate();  // deleted here (retention, the API)
  EXPECT_TRUE(cat.lookup(apps, id("cam-d.mp4")));
  fs::remove(d.path + "/cam-b.mp4");
  now += RecordingCatalog::kIndexTtlMs - 1;
  EXPECT_TRUE(cat.lookup(apps, id("cam-b.mp4")));
  now += 1;
  EXPECT_FALSE(cat.lookup(apps, id("cam-b.mp4"))) << "the index is kIndexTtlMs old";
  // find() scans every time.
  write_fmp4(d.path + "/cam-e.mp4", 1, 1'700'000'040);
  EXPECT_TRUE(cat.find(apps, id("cam-e.mp4")));
}

TEST(ApiRecordings, ParsesRfc3339) {
  using api::parse_rfc3339;
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:00Z"), 0.0);
  EXPECT_EQ(parse_rfc3339("2026-12-05T10:00:00Z"), 1796464800.0);
  EXPECT_EQ(parse_rfc3339("2026-12-05T11:00:00+01:00"), 1796464800.0);
  EXPECT_EQ(parse_rfc3339("2026-12-05t09:30:00.5-00:30"), 1796464800.5);
  EXPECT_FALSE(parse_rfc3339("2026-12-05 10:00:00Z"));
  EXPECT_FALSE(parse_rfc3339("2026-12-05T10:00:00"));
  EXPECT_FALSE(parse_rfc3339("2026-13-05T10:00:00Z"));
  EXPECT_FALSE(parse_rfc3339("2026-12-05T10:00:00Zjunk"));
  EXPECT_FALSE(parse_rfc3339(""));
}

}  // namespace
}  // namespace rill::record
