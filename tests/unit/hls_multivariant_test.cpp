// protocol/hls_multivariant (the multivariant playlist renderer) and media/rendition_group.
#include "rill/protocol/hls_multivariant.h"

#include <gtest/gtest.h>

#include "rill/media/rendition_group.h"
#include "rill/protocol/worker_link_frame.h"

namespace rill::protocol {
namespace {

TEST(HlsMultivariant, VariantStreamAttributesInRfcForm) {
  HlsVariantStream v;
  v.uri = "cam_hi.m3u8";
  v.bandwidth = 1200345;
  v.average_bandwidth = 900000;
  v.codecs = "avc1.64001F,mp4a.40.2";
  v.width = 640;
  v.height = 360;
  v.frame_rate = 29.97;
  EXPECT_EQ(render_variant_stream(v),
            "#EXT-X-STREAM-INF:BANDWIDTH=1200345,AVERAGE-BANDWIDTH=900000,CODECS=\"avc1.64001F,mp4a.40.2\","
            "RESOLUTION=640x360,FRAME-RATE=29.970\ncam_hi.m3u8\n");
  // Unknown attributes are left out; BANDWIDTH is always there (§4.3.4.2: "MUST").
  HlsVariantStream bare;
  bare.uri = "a.m3u8";
  EXPECT_EQ(render_variant_stream(bare), "#EXT-X-STREAM-INF:BANDWIDTH=0\na.m3u8\n");
  // A quoted-string holds no '"' or line break (§4.2); a URI line no line break.
  HlsVariantStream odd;
  odd.uri = "a\n.m3u8";
  odd.bandwidth = 1;
  odd.codecs = "x\"y\r\n";
  EXPECT_EQ(render_variant_stream(odd), "#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS=\"xy\"\na.m3u8\n");
}

TEST(HlsMultivariant, PlaylistWithSharedAudioRendition) {
  HlsAudioRendition a{.group_id = "aud",
                      .name = "English",
                      .uri = "cam_audio.m3u8",
                      .language = "en",
                      .is_default = true,
                      .autoselect = false};
  HlsVariantStream hi{.uri = "cam_hi.m3u8",
                      .bandwidth = 2000000,
                      .codecs = "avc1.640028,mp4a.40.2",
                      .width = 1280,
                      .height = 720,
                      .audio_group = "aud"};
  HlsVariantStream lo{.uri = "cam_lo.m3u8",
                      .bandwidth = 500000,
                      .codecs = "avc1.42C01E,mp4a.40.2",
                      .width = 320,
                      .height = 180,
                      .audio_group = "aud"};
  EXPECT_EQ(render_multivariant_playlist({a}, {hi, lo}),
            "#EXTM3U\n#EXT-X-VERSION:3\n"
            "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"aud\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES,"
            "AUTOSELECT=YES,URI=\"cam_audio.m3u8\"\n"
            "#EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS=\"avc1.640028,mp4a.40.2\",RESOLUTION=1280x720,"
            "AUDIO=\"aud\"\ncam_hi.m3u8\n"
            "#EXT-X-STREAM-INF:BANDWIDTH=500000,CODECS=\"avc1.42C01E,mp4a.40.2\",RESOLUTION=320x180,"
            "AUDIO=\"aud\"\ncam_lo.m3u8\n");
  // Muxed audio: no URI, not DEFAULT.
  EXPECT_EQ(render_audio_rendition(HlsAudioRendition{"g", "main", "", "", false, true}),
            "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"g\",NAME=\"main\",AUTOSELECT=YES\n");
  EXPECT_EQ(assemble_multivariant_playlist({}, {"#EXT-X-STREAM-INF:BANDWIDTH=1\na.m3u8\n"}),
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-STREAM-INF:BANDWIDTH=1\na.m3u8\n");
}

TEST(HlsMultivariant, VariantObjectOnTheWorkerLink) {
  const HlsObjectName v{false, 0, HlsSegmentForm::Ts, "", true};
  EXPECT_EQ(format_hls_object(v), "variant");
  EXPECT_EQ(parse_hls_object("variant"), v);
  EXPECT_EQ(parse_hls_object("variants"), std::nullopt);
}

TEST(RenditionGroup, MembersBySuffix) {
  const std::vector<std::string> suffixes = {"_hi", "_mid", "_lo", "_hi_lo"};
  auto m = media::rendition_member("cam_hi", suffixes);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->group, "cam");
  EXPECT_EQ(m->index, 0u);
  m = media::rendition_member("cam_hi_lo", suffixes);  // the longest suffix wins
  ASSERT_TRUE(m);
  EXPECT_EQ(m->group, "cam");
  EXPECT_EQ(m->index, 3u);
  EXPECT_FALSE(media::rendition_member("_hi", suffixes));  // nothing before the suffix
  EXPECT_FALSE(media::rendition_member("cam", suffixes));
  EXPECT_FALSE(media::rendition_member("cam_hi", {}));
  // is_rendition says the same without the group's name.
  for (const char* name : {"cam_hi", "cam_hi_lo", "cam_mid", "_hi", "cam", "cam_h", "hi"})
    EXPECT_EQ(media::is_rendition(name, suffixes), media::rendition_member(name, suffixes).has_value())
        << name;
  EXPECT_FALSE(media::is_rendition("cam_hi", {}));
  EXPECT_EQ(media::rendition_names("cam", {"_hi", "_lo"}), (std::vector<std::string>{"cam_hi", "cam_lo"}));
}

}  // namespace
}  // namespace rill::protocol
