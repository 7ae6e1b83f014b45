// HLS live media playlist model (RFC 8216).
#include <gtest/gtest.h>

#include <string>

#include "rill/protocol/hls_playlist.h"

using namespace rill::protocol;

namespace {

std::string uri(uint64_t seq) { return "seg-" + std::to_string(seq) + ".ts"; }

void add(HlsPlaylist& p, double d, bool disc = false) {
  uint64_t seq = p.next_sequence();
  auto r = p.add_segment(d, disc, uri(seq));
  EXPECT_EQ(r.sequence, seq);
}

std::string tag(const std::string& text, const std::string& name) {
  auto pos = text.find(name);
  if (pos == std::string::npos) return "";
  auto end = text.find('\n', pos);
  return text.substr(pos + name.size(), end - pos - name.size());
}

}  // namespace

TEST(HlsPlaylist, RendersHeaderAndSegments) {
  HlsPlaylist p(5, 2.0);
  add(p, 2.0);
  add(p, 1.96);
  EXPECT_EQ(p.render(),
            "#EXTM3U\n"
            "#EXT-X-VERSION:3\n"
            "#EXT-X-TARGETDURATION:2\n"
            "#EXT-X-MEDIA-SEQUENCE:0\n"
            "#EXTINF:2.000,\n"
            "seg-0.ts\n"
            "#EXTINF:1.960,\n"
            "seg-1.ts\n");
}

TEST(HlsPlaylist, EmptyPlaylistUsesFragmentDurationRoundedUp) {
  HlsPlaylist p(5, 2.2);
  EXPECT_EQ(tag(p.render(), "#EXT-X-TARGETDURATION:"), "3");
  EXPECT_EQ(p.next_sequence(), 0u);
}

TEST(HlsPlaylist, TargetDurationRounding) {
  {
    HlsPlaylist p(10, 1.0);
    add(p, 1.5);  // rounds to 2
    EXPECT_EQ(tag(p.render(), "#EXT-X-TARGETDURATION:"), "2");
    add(p, 2.4);  // rounds to 2
    EXPECT_EQ(tag(p.render(), "#EXT-X-TARGETDURATION:"), "2");
    add(p, 2.6);  // rounds to 3
    EXPECT_EQ(tag(p.render(), "#EXT-X-TARGETDURATION:"), "3");
  }
  {
    HlsPlaylist p(10, 2.0);
    add(p, 2.4996);  // written as 2.500, which a client rounds to 3
    EXPECT_EQ(tag(p.render(), "#EXTINF:"), "2.500,");
    EXPECT_EQ(tag(p.render(), "#EXT-X-TARGETDURATION:"), "3");
  }
  EXPECT_EQ(hls_rounded_duration(2.49), 2u);
  EXPECT_EQ(hls_rounded_duration(2.5), 3u);
  EXPECT_EQ(hls_rounded_duration(-1), 0u);
}

TEST(HlsPlaylist, TargetDurationNeverDecreases) {
  HlsPlaylist p(2, 2.0);
  add(p, 6.7);  // 7
  // §6.2.2 keeps three target durations (21 s) in the playlist: 11 segments of 2 s.
  for (int i = 0; i < 20; ++i) add(p, 2.0);
  EXPECT_EQ(p.state().segments.size(), 11u);
  // The 6.7 s segment has left; the target stays at 7 (§6.2.1: it must not change).
  for (const auto& s : p.state().segments) EXPECT_EQ(s.duration_s, 2.0);
  EXPECT_EQ(tag(p.render(), "#EXT-X-TARGETDURATION:"), "7");
}

TEST(HlsPlaylist, WindowSlidesAndMediaSequenceIncreases) {
  HlsPlaylist p(3, 2.0);
  std::vector<uint64_t> removed;
  for (int i = 0; i < 6; ++i) {
    auto r = p.add_segment(2.0, false, uri(p.next_sequence()));
    EXPECT_EQ(r.sequence, static_cast<uint64_t>(i));
    for (const auto& s : r.removed) removed.push_back(s.sequence);
  }
  EXPECT_EQ(p.state().segments.size(), 3u);
  EXPECT_EQ(p.state().media_sequence, 3u);
  EXPECT_EQ(removed, (std::vector<uint64_t>{0, 1, 2}));
  std::string text = p.render();
  EXPECT_EQ(tag(text, "#EXT-X-MEDIA-SEQUENCE:"), "3");
  EXPECT_EQ(text.find("seg-2.ts"), std::string::npos);
  EXPECT_NE(text.find("seg-3.ts\n#EXTINF:2.000,\nseg-4.ts\n#EXTINF:2.000,\nseg-5.ts\n"),
            std::string::npos);
}

TEST(HlsPlaylist, KeepsThreeTargetDurations) {
  // §6.2.2: never shorter than three target durations, even past the window.
  HlsPlaylist p(2, 4.0);
  for (int i = 0; i < 5; ++i) add(p, 4.0);
  EXPECT_EQ(p.state().segments.size(), 3u);
  EXPECT_EQ(p.state().media_sequence, 2u);
}

TEST(HlsPlaylist, DiscontinuityTagAndSequenceCounting) {
  HlsPlaylist p(3, 2.0);
  add(p, 2.0);
  add(p, 2.0, true);  // tagged by argument
  p.mark_discontinuity();
  add(p, 2.0);        // tagged by mark_discontinuity
  add(p, 2.0);
  std::string text = p.render();
  EXPECT_EQ(tag(text, "#EXT-X-DISCONTINUITY-SEQUENCE:"), "");  // omitted while 0
  EXPECT_NE(text.find("#EXT-X-DISCONTINUITY\n#EXTINF:2.000,\nseg-1.ts\n"), std::string::npos);
  EXPECT_NE(text.find("#EXT-X-DISCONTINUITY\n#EXTINF:2.000,\nseg-2.ts\n"), std::string::npos);
  EXPECT_EQ(text.find("#EXT-X-DISCONTINUITY\n#EXTINF:2.000,\nseg-3.ts"), std::string::npos);

  add(p, 2.0);  // seg-1 (tagged) leaves
  EXPECT_EQ(p.state().discontinuity_sequence, 1u);
  EXPECT_EQ(tag(p.render(), "#EXT-X-DISCONTINUITY-SEQUENCE:"), "1");
  add(p, 2.0);  // seg-2 (tagged) leaves
  EXPECT_EQ(tag(p.render(), "#EXT-X-DISCONTINUITY-SEQUENCE:"), "2");
  add(p, 2.0);  // seg-3 (untagged) leaves
  EXPECT_EQ(tag(p.render(), "#EXT-X-DISCONTINUITY-SEQUENCE:"), "2");
  EXPECT_EQ(p.render().find("#EXT-X-DISCONTINUITY\n"), std::string::npos);
}

TEST(HlsPlaylist, EndListRendered) {
  HlsPlaylist p(3, 2.0);
  add(p, 2.0);
  EXPECT_FALSE(p.ended());
  p.end();
  EXPECT_TRUE(p.ended());
  std::string text = p.render();
  EXPECT_EQ(text.substr(text.size() - 24), "seg-0.ts\n#EXT-X-ENDLIST\n");
}

TEST(HlsPlaylist, PublisherReconnectKeepsSequenceIncreasing) {
  HlsPlaylist p(3, 2.0);
  for (int i = 0; i < 4; ++i) add(p, 2.0);
  p.end();  // publisher left
  p.restart();  // and came back: same object
  EXPECT_FALSE(p.ended());
  EXPECT_EQ(p.next_sequence(), 4u);
  auto r = p.add_segment(2.0, false, uri(4));
  EXPECT_EQ(r.sequence, 4u);
  EXPECT_TRUE(p.state().segments.back().discontinuity);
  std::string text = p.render();
  EXPECT_EQ(text.find("#EXT-X-ENDLIST"), std::string::npos);
  EXPECT_NE(text.find("#EXT-X-DISCONTINUITY\n#EXTINF:2.000,\nseg-4.ts\n"), std::string::npos);
  EXPECT_EQ(tag(text, "#EXT-X-MEDIA-SEQUENCE:"), "2");
  add(p, 2.0);
  EXPECT_FALSE(p.state().segments.back().discontinuity);  // only the first after restart
}

TEST(HlsPlaylist, AddingToEndedPlaylistRestartsIt) {
  HlsPlaylist p(3, 2.0);
  add(p, 2.0);
  p.end();
  add(p, 2.0);
  EXPECT_FALSE(p.ended());
  EXPECT_TRUE(p.state().segments.back().discontinuity);
  EXPECT_EQ(p.state().segments.back().sequence, 1u);
}

TEST(HlsPlaylist, RenderFromStateCopy) {
  HlsPlaylist p(3, 2.0);
  for (int i = 0; i < 5; ++i) add(p, 2.0, i == 1);
  HlsPlaylistState copy = p.state();
  EXPECT_EQ(render_media_playlist(copy), p.render());
}

TEST(HlsPlaylist, Fmp4SegmentsGetExtXMapWhereTheInitSectionChanges) {
  // RFC 8216 §4.3.2.5: EXT-X-MAP applies to every segment after it until the next one; §7: a
  // playlist with EXT-X-MAP (and no EXT-X-I-FRAMES-ONLY) is version 6.
  HlsPlaylist p(5, 1.0);
  p.add_segment(1.0, false, "cam/0.m4s", "cam/init-1.mp4");
  p.add_segment(1.0, false, "cam/1.m4s", "cam/init-1.mp4");
  p.add_segment(1.0, true, "cam/2.m4s", "cam/init-2.mp4");
  EXPECT_EQ(p.render(),
            "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n"
            "#EXT-X-MAP:URI=\"cam/init-1.mp4\"\n#EXTINF:1.000,\ncam/0.m4s\n#EXTINF:1.000,\ncam/1.m4s\n"
            "#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"cam/init-2.mp4\"\n#EXTINF:1.000,\ncam/2.m4s\n");
}

TEST(HlsPlaylist, SegmentFileNames) {
  EXPECT_EQ(hls_segment_file(HlsSegmentForm::Ts, 12), "12.ts");
  EXPECT_EQ(hls_segment_file(HlsSegmentForm::Fmp4, 12), "12.m4s");
  EXPECT_EQ(hls_segment_file(HlsSegmentForm::Init, 3), "init-3.mp4");
  for (auto form : {HlsSegmentForm::Ts, HlsSegmentForm::Fmp4, HlsSegmentForm::Init}) {
    const std::string name = hls_segment_file(form, 77);  // the split views into it
    const auto split = split_hls_segment_file(name);
    ASSERT_TRUE(split);
    EXPECT_EQ(split->first, form);
    EXPECT_EQ(split->second, "77");
  }
  for (const char* bad : {"12.mp4", "init12.mp4", "12", "x.m3u8", "init-.m4", ".m4", "ts"}) {
    EXPECT_FALSE(split_hls_segment_file(bad)) << bad;
  }
  EXPECT_STREQ(hls_content_type(HlsSegmentForm::Ts), "video/mp2t");
  EXPECT_STREQ(hls_content_type(HlsSegmentForm::Init), "video/mp4");
}

// "a" + n + "b", appended (GCC 12's -Wrestrict misfires on operator+ chains of to_string).
std::string join(const char* a, int n, const char* b) {
  std::string s(a);
  s += std::to_string(n);
  s += b;
  return s;
}

TEST(HlsPlaylist, LowLatencyPartsServerControlAndPreloadHint) {
  // Laid out as RFC 8216bis Appendix B.1 (Low-Latency HLS Playlist): parts of the last segments
  // before their EXTINF, the open segment's parts after the last one, then the preload hint.
  HlsPlaylist p(5, 1.0);
  p.set_low_latency(0.2);
  for (int seg = 0; seg < 2; ++seg) {
    for (int i = 0; i < 5; ++i) {
      const int n = seg * 5 + i;
      p.add_part(0.2, i == 0, join("cam/part-", n, ".m4s"), "cam/init-1.mp4");
    }
    p.add_segment(1.0, false, join("cam/", seg, ".m4s"), "cam/init-1.mp4");
  }
  p.add_part(0.2, true, "cam/part-10.m4s", "cam/init-1.mp4");
  p.set_preload_hint("cam/part-11.m4s");
  const std::string text = p.render();
  EXPECT_EQ(text,
            "#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:1\n"
            "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=6.0,PART-HOLD-BACK=0.600\n"
            "#EXT-X-PART-INF:PART-TARGET=0.200\n#EXT-X-MEDIA-SEQUENCE:0\n"
            "#EXT-X-MAP:URI=\"cam/init-1.mp4\"\n"
            "#EXT-X-PART:DURATION=0.200,URI=\"cam/part-0.m4s\",INDEPENDENT=YES\n"
            "#EXT-X-PART:DURATION=0.200,URI=\"cam/part-1.m4s\"\n"
            "#EXT-X-PART:DURATION=0.200,URI=\"cam/part-2.m4s\"\n"
            "#EXT-X-PART:DURATION=0.200,URI=\"cam/part-3.m4s\"\n"
            "#EXT-X-PART:DURATION=0.200,URI=\"cam/part-4.m4s\"\n"
            "#EXTINF:1.000,\ncam/0.m4s\n"
            "#EXT-X-PART:DURATION=0.200,URI=\"cam/part-5.m4s\",INDEPENDENT=YES\n"
            "#EXT-X-PART:DURATION=0.200,URI=\"cam/part-6.m4s\"\n"
            "#EXT-X-PART:DURATION=0.200,URI=\"cam/part-7.m4s\"\n"
            "#EXT-X-PART:DURATION=0.200,URI=\"cam/part-8.m4s\"\n"
            "#EXT-X-PART:DURATION=0.200,URI=\"cam/part-9.m4s\"\n"
            "#EXTINF:1.000,\ncam/1.m4s\n"
            "#EXT-X-PART:DURATION=0.200,URI=\"cam/part-10.m4s\",INDEPENDENT=YES\n"
            "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"cam/part-11.m4s\"\n");
  p.end();
  const std::string ended = p.render();
  EXPECT_EQ(ended.find("PRELOAD-HINT"), std::string::npos);
  EXPECT_NE(ended.find("#EXT-X-ENDLIST\n"), std::string::npos);
}

TEST(HlsPlaylist, PartsOlderThanThreeTargetDurationsAreLeftOut) {
  HlsPlaylist p(10, 1.0);
  p.set_low_latency(0.5);
  for (int seg = 0; seg < 6; ++seg) {
    p.add_part(0.5, true, join("p", seg, "a"));
    p.add_part(0.5, false, join("p", seg, "b"));
    p.add_segment(1.0, false, join("", seg, ".m4s"));
  }
  const std::string text = p.render();
  // RFC 8216bis §4.4.4.9: only the last three target durations keep their parts.
  for (int seg = 0; seg < 3; ++seg) EXPECT_EQ(text.find(join("\"p", seg, "a\"")), std::string::npos) << seg;
  for (int seg = 3; seg < 6; ++seg) EXPECT_NE(text.find(join("\"p", seg, "a\"")), std::string::npos) << seg;
}

TEST(HlsPlaylist, DeltaUpdateSkipsSegmentsOlderThanCanSkipUntil) {
  // §6.2.5.1: EXT-X-SKIP replaces the segments that end more than CAN-SKIP-UNTIL (6 x target)
  // before the end of the playlist.
  HlsPlaylist p(12, 1.0);
  p.set_low_latency(0.2);
  for (int seg = 0; seg < 10; ++seg) p.add_segment(1.0, false, join("", seg, ".m4s"));
  const std::string full = p.render(false), delta = p.render(true);
  EXPECT_EQ(full.find("EXT-X-SKIP"), std::string::npos);
  EXPECT_NE(delta.find("#EXT-X-SKIP:SKIPPED-SEGMENTS=3\n#EXTINF:1.000,\n3.m4s\n"), std::string::npos) << delta;
  EXPECT_EQ(delta.find("\n2.m4s\n"), std::string::npos);
  EXPECT_NE(delta.find("#EXT-X-MEDIA-SEQUENCE:0\n"), std::string::npos);  // of the full playlist
}
