// record::close_out_file and the recording files' scan: leftovers made here with the recorder's
// writers (Fmp4Muxer, FlvFileWriter), cut mid-unit as a killed worker leaves them.
#include "rill/record/close_out.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "codec_test_data.h"
#include "rill/protocol/flv_file_writer.h"
#include "rill/protocol/fmp4_muxer.h"

namespace rill::record {
namespace {

namespace fs = std::filesystem;
using namespace rill::protocol;
using Bytes = std::vector<uint8_t>;

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/rill-co-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(path); }
};

void put(const std::string& path, const Bytes& b) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}
Bytes get(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

Bytes fmp4_with_fragments(int n) {
  Fmp4Tracks t;
  t.has_video = true;
  t.video_record = rill::testdata::kAvcRecord;
  Fmp4Muxer mux(t);
  Bytes out = mux.init_segment();
  const Bytes idr = {0, 0, 0, 2, 0x65, 0x88};
  for (int f = 0; f < n; ++f) {
    for (int i = 0; i < 25; ++i) mux.add({true, f * 1000 + i * 40, 0, i == 0, idr});
    mux.flush((f + 1) * 1000, out);
  }
  return out;
}

TEST(RecordingRoot, TheDirectoryBeforeThePlaceholders) {
  EXPECT_EQ(recording_root("/rec/{app}/{name}/{start}", "live"), "/rec/live");
  EXPECT_EQ(recording_root("/rec/{name}-{start}", "live"), "/rec");
  EXPECT_EQ(recording_root("/rec/x{{y}}/{name}", "live"), "/rec/x{y}");
  EXPECT_EQ(recording_root("/{name}", "live"), "/");
}

TEST(CloseOut, CutsAPartialFragmentAndKeepsTheMtime) {
  TempDir d;
  const std::string path = d.path + "/live/cam/a.mp4";
  const Bytes whole = fmp4_with_fragments(3);
  Bytes partial = whole;
  partial.resize(whole.size() - 10);
  put(path, partial);
  const struct timespec old[2] = {{0, UTIME_OMIT}, {1'600'000'000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), old, 0), 0);

  const CloseOutResult r = close_out_file(path);
  EXPECT_EQ(r.action, CloseOutAction::Fixed) << r.detail;
  const Bytes now = get(path);
  EXPECT_EQ(now, Bytes(whole.begin(), whole.begin() + fmp4_with_fragments(2).size()));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 1'600'000'000);
  EXPECT_EQ(close_out_file(path).action, CloseOutAction::Complete);  // idempotent
}

TEST(CloseOut, RewritesAnUnclosedFlvsMetadataAsTheWriterWould) {
  TempDir d;
  const std::string path = d.path + "/b.flv";
  FlvFileWriterOptions o;
  o.has_audio = o.has_video = true;
  o.keyframe_capacity = 40;
  o.source_metadata.set("encoder", Amf0Value::string("test"));
  FlvFileWriter w(o);
  Bytes file;
  w.begin(file);
  w.write_tag(9, 0, Bytes{0x17, 0, 0, 0, 0, 1}, false, file);
  for (uint32_t ms = 0; ms < 3000; ms += 40) {
    const bool key = ms % 1000 == 0;
    w.write_tag(9, ms, Bytes{uint8_t(key ? 0x17 : 0x27), 1, 0, 0, 0, 0xAB}, key, file);
    w.write_tag(8, ms, Bytes{0xAF, 1, 0x21}, false, file);
  }
  Bytes expected = file;
  const Bytes meta = w.final_metadata();
  std::copy(meta.begin(), meta.end(), expected.begin() + FlvFileWriter::kMetadataOffset);
  file.push_back(9);  // a tag header begun, the worker killed
  file.push_back(0);
  put(path, file);

  const CloseOutResult r = close_out_file(path);
  EXPECT_EQ(r.action, CloseOutAction::Fixed) << r.detail;
  EXPECT_EQ(get(path), expected);
}

TEST(CloseOut, RemovesWhatHoldsNothingPlayable) {
  TempDir d;
  const std::string empty = d.path + "/e.mp4", init = d.path + "/i.mp4";
  put(empty, {});
  const Bytes f = fmp4_with_fragments(1);
  put(init, Bytes(f.begin(), f.end() - 5));
  EXPECT_EQ(close_out_file(empty).action, CloseOutAction::Removed);
  EXPECT_EQ(close_out_file(init).action, CloseOutAction::Removed);
  EXPECT_FALSE(fs::exists(empty));
  EXPECT_FALSE(fs::exists(init));
}

TEST(CloseOut, LeavesLockedFilesAndOtherFilesAlone) {
  TempDir d;
  const std::string locked = d.path + "/l.mp4", plain = d.path + "/p.mp4";
  put(locked, {});
  const int fd = ::open(locked.c_str(), O_RDONLY);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  EXPECT_EQ(close_out_file(locked).action, CloseOutAction::BeingWritten);
  std::string error;
  const auto files = list_recording_files(d.path, error);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(files[0].locked);
  ::close(fd);
  EXPECT_FALSE(recording_locked(locked));

  // ftyp, mdat, moov: a plain MP4 someone put there.
  Bytes mp4 = {0, 0, 0, 16, 'f', 't', 'y', 'p', 'i', 's', 'o', 'm', 0, 0, 0, 0};
  for (uint8_t b : Bytes{0, 0, 0, 12, 'm', 'd', 'a', 't', 1, 2, 3, 4}) mp4.push_back(b);
  put(plain, mp4);
  EXPECT_EQ(close_out_file(plain).action, CloseOutAction::NotARecording);
  EXPECT_TRUE(fs::exists(plain));
}

}  // namespace
}  // namespace rill::record
