// Relay framing (protocol/worker_link_frame.h): frames and request lines, bytes in / bytes out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rill/protocol/error.h"
#include "rill/protocol/worker_link_frame.h"

namespace rill::protocol {
namespace {

std::vector<uint8_t> bytes_of(const BufferRef& b) { return {b.data(), b.data() + b.size()}; }

std::vector<uint8_t> media_frame(LinkFrameType type, uint8_t flags, uint32_t ts, const std::vector<uint8_t>& body) {
  LinkFrameHeader h;
  h.type = type;
  h.flags = flags;
  h.timestamp = ts;
  h.length = static_cast<uint32_t>(body.size());
  std::vector<uint8_t> out = bytes_of(link_header_buffer(h));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<LinkFrame> read_all(const std::vector<uint8_t>& wire, size_t piece, LinkReaderLimits lim = {}) {
  std::vector<LinkFrame> got;
  LinkFrameReader r([&](LinkFrame&& f) { got.push_back(std::move(f)); }, lim);
  for (size_t i = 0; i < wire.size(); i += piece) r.feed({wire.data() + i, std::min(piece, wire.size() - i)});
  EXPECT_TRUE(r.at_boundary());
  return got;
}

TEST(LinkFrame, HeaderIsTwelveBigEndianBytes) {
  LinkFrameHeader h;
  h.type = LinkFrameType::Video;
  h.flags = link_flag::Keyframe | link_flag::SequenceHeader;
  h.timestamp = 0x01020304;
  h.length = 0x0A0B0C0D;
  EXPECT_EQ(bytes_of(link_header_buffer(h)),
            (std::vector<uint8_t>{9, 3, 0, 0, 1, 2, 3, 4, 0x0A, 0x0B, 0x0C, 0x0D}));
  EXPECT_EQ(bytes_of(link_control_frame(LinkFrameType::Error, "no")),
            (std::vector<uint8_t>{0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 'n', 'o'}));
}

TEST(LinkFrame, RoundTripInAnyPieces) {
  std::vector<uint8_t> wire = bytes_of(link_control_frame(LinkFrameType::Publish));
  std::vector<uint8_t> video(5000);
  for (size_t i = 0; i < video.size(); ++i) video[i] = static_cast<uint8_t>(i * 7);
  auto add = [&](const std::vector<uint8_t>& v) { wire.insert(wire.end(), v.begin(), v.end()); };
  add(media_frame(LinkFrameType::Data, link_flag::Metadata, 0, {2, 0, 10, 'o', 'n', 'M', 'e', 't', 'a', 'D', 'a', 't', 'a'}));
  add(media_frame(LinkFrameType::Video, link_flag::Keyframe, 40, video));
  add(media_frame(LinkFrameType::Audio, 0, 0xFFFFFFFF, {0xAF, 1}));
  add(media_frame(LinkFrameType::Video, 0, 80, {}));  // an empty body is a frame too
  add(bytes_of(link_control_frame(LinkFrameType::Unpublish)));
  for (size_t piece : {size_t(1), size_t(5), size_t(12), size_t(13), size_t(4096), wire.size()}) {
    auto got = read_all(wire, piece);
    ASSERT_EQ(got.size(), 6u) << piece;
    EXPECT_EQ(got[0].header.type, LinkFrameType::Publish);
    EXPECT_EQ(got[1].header.type, LinkFrameType::Data);
    EXPECT_EQ(got[1].header.flags, link_flag::Metadata);
    EXPECT_EQ(got[2].header.timestamp, 40u);
    EXPECT_EQ(bytes_of(got[2].body), video);
    EXPECT_EQ(got[2].body->capacity(), video.size());  // allocated once, exactly
    EXPECT_EQ(got[3].header.timestamp, 0xFFFFFFFFu);
    EXPECT_EQ(got[4].body.size(), 0u);
    EXPECT_EQ(got[5].header.type, LinkFrameType::Unpublish);
  }
}

TEST(LinkFrame, MalformedInputThrows) {
  auto fails = [](std::vector<uint8_t> wire, LinkReaderLimits lim = {}) {
    LinkFrameReader r([](LinkFrame&&) {}, lim);
    EXPECT_THROW(r.feed(wire), ProtocolError);
  };
  fails({7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});           // unknown type
  fails({9, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});        // reserved flag bit
  fails({9, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0});           // reserved bytes
  fails({0x41, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});        // flags on a control frame
  fails({0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 1});     // control body over 4096
  LinkReaderLimits small;
  small.max_body = 100;
  fails({9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 101}, small);  // media body over the limit
  fails({9, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF});  // 4 GiB body
  // Exactly at the limit is fine.
  std::vector<uint8_t> ok = media_frame(LinkFrameType::Video, 0, 0, std::vector<uint8_t>(100, 1));
  EXPECT_EQ(read_all(ok, 7, small).size(), 1u);
}

TEST(LinkRequest, ParseAndFormat) {
  LinkRequest r = parse_link_request("PLAY live/cam-1.x~y_z");
  EXPECT_EQ(r.kind, LinkRequest::Kind::Play);
  EXPECT_EQ(r.app, "live");
  EXPECT_EQ(r.name, "cam-1.x~y_z");
  EXPECT_EQ(format_link_request(r), "PLAY live/cam-1.x~y_z\n");
  EXPECT_EQ(parse_link_request("PLAY live/cam\r").name, "cam");
  EXPECT_EQ(parse_link_request("STATS").kind, LinkRequest::Kind::Stats);
  EXPECT_EQ(parse_link_request("STATS ALL").kind, LinkRequest::Kind::StatsAll);
  LinkRequest h = parse_link_request("HLS live/cam index.m3u8");
  EXPECT_EQ(h.kind, LinkRequest::Kind::Hls);
  EXPECT_EQ(h.object, "index.m3u8");
  EXPECT_EQ(format_link_request(h), "HLS live/cam index.m3u8\n");
  for (auto k : {LinkRequest::Kind::Stats, LinkRequest::Kind::StatsAll}) {
    LinkRequest s;
    s.kind = k;
    std::string line = format_link_request(s);
    EXPECT_EQ(parse_link_request(line.substr(0, line.size() - 1)).kind, k);
  }
}

TEST(LinkRequest, RejectsWhatIsNotExactlyARequest) {
  for (const char* bad : {"", "PLAY", "PLAY live", "PLAY /cam", "PLAY live/", "PLAY live/../x", "PLAY live/a/b",
                          "PLAY live/.. ", "PLAY  live/cam", "PLAY live/cam ", "play live/cam", "STATS SOME",
                          "STATS ALL NOW", "HLS live/cam", "HLS live/cam ../x", "HLS live/cam x.m3u8", "HLS live/cam 01.ts",
                          "HLS live/cam 1.ts x", "HLS live/cam 18446744073709551616.ts", "HLS live/cam .ts", "GET / HTTP/1.1", "PLAY live/c\tam",
                          "PLAY live/caf\xc3\xa9"}) {
    EXPECT_THROW(parse_link_request(bad), ProtocolError) << bad;
  }
  EXPECT_THROW(parse_link_request("PLAY live/" + std::string(kLinkMaxName + 1, 'x')), ProtocolError);
  EXPECT_NO_THROW(parse_link_request("PLAY live/" + std::string(kLinkMaxName, 'x')));
  EXPECT_THROW(parse_link_request(std::string(kLinkMaxRequestLine + 1, 'A')), ProtocolError);
}

TEST(RelayHls, ObjectNames) {
  EXPECT_EQ(parse_hls_object("index.m3u8"), (HlsObjectName{true, 0}));
  EXPECT_EQ(parse_hls_object("0.ts"), (HlsObjectName{false, 0}));
  EXPECT_EQ(parse_hls_object("42.ts"), (HlsObjectName{false, 42}));
  EXPECT_EQ(parse_hls_object("18446744073709551615.ts"), (HlsObjectName{false, UINT64_MAX}));
  for (const char* bad : {"", "index", "x.m3u8", "INDEX.M3U8", ".ts", "1.TS", "01.ts", "-1.ts", "1a.ts", "1.ts.ts",
                          "18446744073709551616.ts", "99999999999999999999.ts", "1 .ts"}) {
    EXPECT_FALSE(parse_hls_object(bad)) << bad;
  }
  for (HlsObjectName o : {HlsObjectName{true, 0}, HlsObjectName{false, 0}, HlsObjectName{false, 123456789012345ull}}) {
    EXPECT_EQ(parse_hls_object(format_hls_object(o)), o);
  }
  LinkRequest r = parse_link_request("HLS live/cam 17.ts");
  EXPECT_EQ(r.kind, LinkRequest::Kind::Hls);
  EXPECT_EQ(r.key(), "live/cam");
  EXPECT_EQ(r.object, "17.ts");
  EXPECT_EQ(format_link_request(r), "HLS live/cam 17.ts\n");
}

TEST(RelayHls, ObjectAnswerCarriesMaxAgeAndBody) {
  const std::vector<uint8_t> body(3000, 0x47);
  std::vector<uint8_t> wire = bytes_of(link_hls_object_header(21, static_cast<uint32_t>(body.size())));
  ASSERT_EQ(wire.size(), kLinkHeaderSize);
  EXPECT_EQ(wire[0], 0x50);
  wire.insert(wire.end(), body.begin(), body.end());
  const auto err = bytes_of(link_control_frame(LinkFrameType::Error, "no such segment"));
  wire.insert(wire.end(), err.begin(), err.end());
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}}) {
    auto got = read_all(wire, piece);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].header.type, LinkFrameType::HlsObject);
    EXPECT_EQ(got[0].header.timestamp, 21u);
    EXPECT_EQ(bytes_of(got[0].body), body);
    EXPECT_EQ(got[1].header.type, LinkFrameType::Error);
    EXPECT_EQ(got[1].body->view(), "no such segment");
  }
  // An object over the reader's body limit is refused.
  LinkReaderLimits lim;
  lim.max_body = 100;
  LinkFrameReader r([](LinkFrame&&) {}, lim);
  auto big = bytes_of(link_hls_object_header(0, 101));
  EXPECT_THROW(r.feed(big), ProtocolError);
}

}  // namespace
}  // namespace rill::protocol
