#include "rill/protocol/recording_playlist.h"

#include <gtest/gtest.h>

using rill::protocol::Fmp4Fragment;
using rill::protocol::recording_vod_playlist;
using rill::protocol::RecordingPlaylistFile;
using rill::protocol::RecordingPlaylistOptions;

namespace {

// `n` fragments of `seconds` each, 1000 bytes, after a 500-byte init part; a keyframe every `gop`.
RecordingPlaylistFile file(const std::string& uri, double start, int n, double seconds, int gop) {
  RecordingPlaylistFile f{uri, start, 500, {}};
  for (int i = 0; i < n; ++i) {
    Fmp4Fragment frag;
    frag.offset = 500 + 1000u * static_cast<unsigned>(i);
    frag.size = 1000;
    frag.keyframe = i % gop == 0;
    frag.start_seconds = 10 + i * seconds;  // a file's decode times need not start at 0
    frag.duration_seconds = seconds;
    f.fragments.push_back(frag);
  }
  return f;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(RecordingPlaylist, GroupsFragmentsFromKeyframesToTheTarget) {
  // 1 s fragments, a keyframe every 2: with a 4 s target, segments of 4 fragments.
  const std::string p = recording_vod_playlist({file("/r/a.mp4?t=1", 1800000000, 8, 1.0, 2)}, {4, {}, {}});
  EXPECT_EQ(p,
            "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:0\n"
            "#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-INDEPENDENT-SEGMENTS\n"
            "#EXT-X-MAP:URI=\"/r/a.mp4?t=1\",BYTERANGE=\"500@0\"\n"
            "#EXT-X-PROGRAM-DATE-TIME:2027-01-15T08:00:00.000Z\n"
            "#EXTINF:4.000,\n#EXT-X-BYTERANGE:4000@500\n/r/a.mp4?t=1\n"
            "#EXTINF:4.000,\n#EXT-X-BYTERANGE:4000@4500\n/r/a.mp4?t=1\n"
            "#EXT-X-ENDLIST\n");
}

TEST(RecordingPlaylist, ALongGopMakesALongSegmentAndTheTarget) {
  // A keyframe every 5 fragments of 1.5 s with a 2 s target: segments of 7.5 s, target 8.
  const std::string p = recording_vod_playlist({file("a.mp4", 0, 10, 1.5, 5)}, {2, {}, {}});
  EXPECT_NE(p.find("#EXT-X-TARGETDURATION:8\n"), std::string::npos) << p;
  EXPECT_EQ(count(p, "#EXTINF:7.500,"), 2u) << p;
  EXPECT_NE(p.find("#EXT-X-BYTERANGE:5000@5500\n"), std::string::npos) << p;
}

TEST(RecordingPlaylist, FragmentsBeforeTheFirstKeyframeAreLeftOut) {
  auto f = file("a.mp4", 0, 4, 1.0, 2);
  f.fragments[0].keyframe = false;
  f.fragments[2].keyframe = true;
  const std::string p = recording_vod_playlist({f}, {4, {}, {}});
  EXPECT_NE(p.find("#EXT-X-BYTERANGE:2000@2500\n"), std::string::npos) << p;
  EXPECT_EQ(count(p, "#EXTINF:"), 1u) << p;
  EXPECT_NE(p.find("PROGRAM-DATE-TIME:1970-01-01T00:00:02.000Z"), std::string::npos) << p;
}

TEST(RecordingPlaylist, ADiscontinuityAndAMapPerFile) {
  const std::string p = recording_vod_playlist(
      {file("a.mp4", 100, 4, 1.0, 1), file("b.mp4", 104, 4, 1.0, 1), file("c.mp4", 108, 2, 1.0, 1)},
      {2, {}, {}});
  EXPECT_EQ(count(p, "#EXT-X-DISCONTINUITY\n"), 2u) << p;
  EXPECT_EQ(count(p, "#EXT-X-MAP:"), 3u) << p;
  EXPECT_EQ(count(p, "#EXT-X-PROGRAM-DATE-TIME:"), 3u) << p;
  EXPECT_EQ(count(p, "#EXTINF:2.000,"), 5u) << p;
  EXPECT_LT(p.find("#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"b.mp4\""), p.find("b.mp4\n")) << p;
}

TEST(RecordingPlaylist, OnlySegmentsInTheWindow) {
  const std::vector<RecordingPlaylistFile> files = {file("a.mp4", 100, 4, 1.0, 1),
                                                    file("b.mp4", 104, 4, 1.0, 1)};
  // [103.5, 105]: a's last segment [102, 104) and b's first [104, 106).
  std::string p = recording_vod_playlist(files, {2, 103.5, 105});
  EXPECT_EQ(count(p, "#EXTINF:"), 2u) << p;
  EXPECT_NE(p.find("#EXT-X-BYTERANGE:2000@2500\na.mp4\n"), std::string::npos) << p;
  EXPECT_NE(p.find("#EXT-X-BYTERANGE:2000@500\nb.mp4\n"), std::string::npos) << p;
  EXPECT_EQ(recording_vod_playlist(files, {2, 200, {}}), "");
  EXPECT_EQ(recording_vod_playlist({}, {}), "");
}
