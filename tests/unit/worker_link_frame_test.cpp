// Worker-link framing (protocol/worker_link_frame.h): typed frames and requests, bytes in / out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rill/protocol/error.h"
#include "rill/protocol/worker_link_frame.h"

namespace rill::protocol {
namespace {

std::vector<uint8_t> bytes_of(const BufferRef& b) { return {b.data(), b.data() + b.size()}; }

std::vector<uint8_t> media_frame(LinkFrameType type, uint8_t flags, uint32_t ts, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> out = bytes_of(link_media_header(type, flags, ts, static_cast<uint32_t>(body.size())));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<LinkMessage> read_all(const std::vector<uint8_t>& wire, size_t piece, LinkReaderLimits lim = {}) {
  std::vector<LinkMessage> got;
  LinkFrameReader r([&](LinkMessage&& m) { got.push_back(std::move(m)); }, lim);
  for (size_t i = 0; i < wire.size(); i += piece) r.feed({wire.data() + i, std::min(piece, wire.size() - i)});
  EXPECT_TRUE(r.at_boundary());
  return got;
}

TEST(LinkFrame, HeaderIsTwelveBigEndianBytes) {
  EXPECT_EQ(bytes_of(link_media_header(LinkFrameType::Video, link_flag::Keyframe | link_flag::SequenceHeader,
                                       0x01020304, 0x0A0B0C0D)),
            (std::vector<uint8_t>{9, 3, 0, 0, 1, 2, 3, 4, 0x0A, 0x0B, 0x0C, 0x0D}));
  EXPECT_EQ(bytes_of(encode_link_message(LinkError{"no"})),
            (std::vector<uint8_t>{0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 'n', 'o'}));
  EXPECT_EQ(bytes_of(encode_link_message(LinkPublish{})), (std::vector<uint8_t>{0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  // An HLS object: the timestamp field stays zero; the answer head is the body's first 8 bytes
  // (status, cache kind, Retry-After, max-age).
  EXPECT_EQ(bytes_of(link_hls_object_header(HlsAnswerHead{200, HlsCachePolicy::immutable(21)}, 3000)),
            (std::vector<uint8_t>{0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0B, 0xC0, 0, 200, 2, 0, 0, 0, 0, 21}));
  EXPECT_EQ(bytes_of(link_hls_object_header(HlsAnswerHead{503, {}, 1}, 2)),
            (std::vector<uint8_t>{0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0x01, 0xF7, 0, 1, 0, 0, 0, 0}));
}

TEST(LinkFrame, RoundTripInAnyPieces) {
  std::vector<uint8_t> wire = bytes_of(encode_link_message(LinkPublish{}));
  std::vector<uint8_t> video(5000);
  for (size_t i = 0; i < video.size(); ++i) video[i] = static_cast<uint8_t>(i * 7);
  auto add = [&](const std::vector<uint8_t>& v) { wire.insert(wire.end(), v.begin(), v.end()); };
  add(media_frame(LinkFrameType::Data, link_flag::Metadata, 0, {2, 0, 10, 'o', 'n', 'M', 'e', 't', 'a', 'D', 'a', 't', 'a'}));
  add(media_frame(LinkFrameType::Video, link_flag::Keyframe, 40, video));
  add(media_frame(LinkFrameType::Audio, 0, 0xFFFFFFFF, {0xAF, 1}));
  add(media_frame(LinkFrameType::Video, 0, 80, {}));  // an empty body is a frame too
  add(bytes_of(encode_link_message(LinkUnpublish{})));
  add(bytes_of(encode_link_message(LinkStats{R"({"slot":1})"})));
  add(bytes_of(encode_link_message(LinkEnd{})));
  for (size_t piece : {size_t(1), size_t(5), size_t(12), size_t(13), size_t(4096), wire.size()}) {
    auto got = read_all(wire, piece);
    ASSERT_EQ(got.size(), 8u) << piece;
    EXPECT_TRUE(std::holds_alternative<LinkPublish>(got[0]));
    const auto& meta = std::get<LinkMedia>(got[1]);
    EXPECT_EQ(meta.type, LinkFrameType::Data);
    EXPECT_EQ(meta.flags, link_flag::Metadata);
    const auto& key = std::get<LinkMedia>(got[2]);
    EXPECT_EQ(key.timestamp, 40u);
    EXPECT_EQ(bytes_of(key.body), video);
    EXPECT_EQ(key.body->capacity(), video.size());  // allocated once, exactly
    EXPECT_EQ(std::get<LinkMedia>(got[3]).timestamp, 0xFFFFFFFFu);
    EXPECT_EQ(std::get<LinkMedia>(got[4]).body.size(), 0u);
    EXPECT_TRUE(std::holds_alternative<LinkUnpublish>(got[5]));
    EXPECT_EQ(std::get<LinkStats>(got[6]).json, R"({"slot":1})");
    EXPECT_TRUE(std::holds_alternative<LinkEnd>(got[7]));
    EXPECT_EQ(link_message_type(got[7]), LinkFrameType::End);
  }
}

TEST(LinkFrame, MalformedInputThrows) {
  auto fails = [](std::vector<uint8_t> wire, LinkReaderLimits lim = {}) {
    LinkFrameReader r([](LinkMessage&&) {}, lim);
    EXPECT_THROW(r.feed(wire), ProtocolError);
  };
  fails({7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});           // unknown type
  fails({9, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});        // reserved flag bit
  fails({9, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0});           // reserved bytes
  fails({0x41, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});        // flags on a control frame
  fails({0x50, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 4});        // a timestamp on an HLS object
  fails({0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});        // a body on Publish
  fails({0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7});        // an HLS object without its answer head
  fails({0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 1});     // error body over 4096
  LinkReaderLimits small;
  small.max_body = 100;
  small.max_stats_body = 10;
  fails({9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 101}, small);  // media body over the limit
  fails({0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 109, 0, 200, 0, 0, 0, 0, 0, 0}, small);  // HLS object too big
  fails({0x51, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11}, small);   // statistics over their limit
  fails({9, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF});  // 4 GiB body
  // Exactly at the limits is fine.
  std::vector<uint8_t> ok = media_frame(LinkFrameType::Video, 0, 0, std::vector<uint8_t>(100, 1));
  EXPECT_EQ(read_all(ok, 7, small).size(), 1u);
  ok = bytes_of(encode_link_message(LinkHlsObject{{}, SharedBuffer::copy_of(std::string(100, 'x'))}));
  EXPECT_EQ(read_all(ok, 7, small).size(), 1u);
}

TEST(LinkRequest, ParseAndFormat) {
  const LinkRequest r = parse_link_request("PLAY live/cam-1.x~y_z");
  EXPECT_EQ(r, LinkRequest(LinkPlayRequest{"live", "cam-1.x~y_z"}));
  EXPECT_EQ(format_link_request(r), "PLAY live/cam-1.x~y_z\n");
  EXPECT_EQ(std::get<LinkPlayRequest>(parse_link_request("PLAY live/cam\r")).name, "cam");
  EXPECT_EQ(parse_link_request("STATS"), LinkRequest(LinkStatsRequest{false}));
  EXPECT_EQ(parse_link_request("STATS ALL"), LinkRequest(LinkStatsRequest{true}));
  const LinkRequest h = parse_link_request("HLS live/cam index.m3u8");
  EXPECT_EQ(h, LinkRequest(LinkHlsRequest{"live", "cam", HlsObjectName{true, 0}}));
  EXPECT_EQ(format_link_request(h), "HLS live/cam index.m3u8\n");
  for (const LinkRequest& q : {LinkRequest(LinkStatsRequest{false}), LinkRequest(LinkStatsRequest{true}),
                               LinkRequest(LinkHlsRequest{"a", "b", HlsObjectName{false, 7}})}) {
    const std::string line = format_link_request(q);
    EXPECT_EQ(parse_link_request(line.substr(0, line.size() - 1)), q) << line;
  }
}

TEST(LinkRequest, NamesAreLeftToTheNameRule) {
  // The protocol splits words; what a name may contain is media::StreamKey's rule, applied by
  // the worker that answers (workers/), so these parse.
  EXPECT_EQ(parse_link_request("PLAY live/../x"), LinkRequest(LinkPlayRequest{"live", "../x"}));
  EXPECT_EQ(parse_link_request("PLAY live/a/b"), LinkRequest(LinkPlayRequest{"live", "a/b"}));
  EXPECT_EQ(parse_link_request("PLAY /cam"), LinkRequest(LinkPlayRequest{"", "cam"}));
  const std::string longest = "PLAY live/" + std::string(kLinkMaxRequestLine - 10, 'x');
  EXPECT_EQ(std::get<LinkPlayRequest>(parse_link_request(longest)).name.size(), kLinkMaxRequestLine - 10);
}

TEST(LinkRequest, RejectsWhatIsNotExactlyARequest) {
  for (const char* bad : {"", "PLAY", "PLAY live", "PLAY  live/cam", "PLAY live/cam ", "play live/cam", "STATS SOME",
                          "STATS ALL NOW", "HLS live/cam", "HLS live/cam ../x", "HLS live/cam x.m3u8", "HLS live/cam 01.ts",
                          "HLS live/cam 1.ts x", "HLS live/cam 18446744073709551616.ts", "HLS live/cam .ts", "GET / HTTP/1.1",
                          "PLAY live/c\tam", "PLAY live/caf\xc3\xa9"}) {
    EXPECT_THROW(parse_link_request(bad), ProtocolError) << bad;
  }
  EXPECT_THROW(parse_link_request(std::string(kLinkMaxRequestLine + 1, 'A')), ProtocolError);
  EXPECT_THROW(parse_link_request("PLAY live/" + std::string(kLinkMaxRequestLine, 'x')), ProtocolError);
}

TEST(RelayHls, ObjectNames) {
  EXPECT_EQ(parse_hls_object("index.m3u8"), (HlsObjectName{true, 0}));
  EXPECT_EQ(parse_hls_object("0.ts"), (HlsObjectName{false, 0}));
  EXPECT_EQ(parse_hls_object("42.ts"), (HlsObjectName{false, 42}));
  EXPECT_EQ(parse_hls_object("18446744073709551615.ts"), (HlsObjectName{false, UINT64_MAX}));
  EXPECT_EQ(parse_hls_object("42.m4s"), (HlsObjectName{false, 42, HlsSegmentForm::Fmp4}));
  EXPECT_EQ(parse_hls_object("init-3.mp4"), (HlsObjectName{false, 3, HlsSegmentForm::Init}));
  EXPECT_FALSE(parse_hls_object("init-.mp4"));
  // LL-HLS delivery directives ride on the playlist object, canonical form only.
  HlsObjectName blocking;
  blocking.directives = "_HLS_msn=5&_HLS_part=2&_HLS_skip=YES";
  EXPECT_EQ(parse_hls_object("index.m3u8?_HLS_msn=5&_HLS_part=2&_HLS_skip=YES"), blocking);
  EXPECT_EQ(format_hls_object(blocking), "index.m3u8?_HLS_msn=5&_HLS_part=2&_HLS_skip=YES");
  for (const char* bad : {"index.m3u8?", "index.m3u8?_HLS_part=2&_HLS_msn=5", "index.m3u8?_HLS_part=2",
                          "index.m3u8?_HLS_msn=x", "index.m3u8?a=b", "index.m3u8?_HLS_skip=v2"}) {
    EXPECT_FALSE(parse_hls_object(bad)) << bad;
  }
  EXPECT_EQ(parse_hls_object("part-9.m4s"), (HlsObjectName{false, 9, HlsSegmentForm::Part}));
  EXPECT_FALSE(parse_hls_object("init-03.mp4"));
  EXPECT_EQ(format_hls_object(HlsObjectName{false, 5, HlsSegmentForm::Init}), "init-5.mp4");
  for (const char* bad : {"", "index", "x.m3u8", "INDEX.M3U8", ".ts", "1.TS", "01.ts", "-1.ts", "1a.ts", "1.ts.ts",
                          "18446744073709551616.ts", "99999999999999999999.ts", "1 .ts"}) {
    EXPECT_FALSE(parse_hls_object(bad)) << bad;
  }
  for (HlsObjectName o : {HlsObjectName{true, 0}, HlsObjectName{false, 0}, HlsObjectName{false, 123456789012345ull}}) {
    EXPECT_EQ(parse_hls_object(format_hls_object(o)), o);
  }
  const LinkRequest r = parse_link_request("HLS live/cam 17.ts");
  EXPECT_EQ(r, LinkRequest(LinkHlsRequest{"live", "cam", HlsObjectName{false, 17}}));
  EXPECT_EQ(format_link_request(r), "HLS live/cam 17.ts\n");
}

TEST(RelayHls, ObjectAnswerCarriesItsOwnHead) {
  const std::vector<uint8_t> body(3000, 0x47);
  const HlsAnswerHead head{200, HlsCachePolicy::immutable(21)};
  std::vector<uint8_t> wire = bytes_of(link_hls_object_header(head, static_cast<uint32_t>(body.size())));
  ASSERT_EQ(wire.size(), kLinkHeaderSize + kLinkHlsPrefixSize);
  wire.insert(wire.end(), body.begin(), body.end());
  const auto err = bytes_of(encode_link_message(LinkError{"no such segment"}));
  wire.insert(wire.end(), err.begin(), err.end());
  for (size_t piece : {size_t{1}, size_t{7}, size_t{14}, size_t{4096}}) {
    auto got = read_all(wire, piece);
    ASSERT_EQ(got.size(), 2u);
    const auto& object = std::get<LinkHlsObject>(got[0]);
    EXPECT_EQ(object.head, head);
    EXPECT_EQ(bytes_of(object.body), body);
    EXPECT_EQ(object.body->capacity(), body.size());
    EXPECT_EQ(std::get<LinkError>(got[1]).reason, "no such segment");
  }
  // The header-and-prefix writer and the whole-frame encoder agree.
  const LinkHlsObject o{{200, HlsCachePolicy::max_age(5)},
                        SharedBuffer::copy_of(std::string_view("#EXTM3U\n"))};
  std::vector<uint8_t> split = bytes_of(link_hls_object_header(o.head, 8));
  split.insert(split.end(), o.body.data(), o.body.data() + 8);
  EXPECT_EQ(split, bytes_of(encode_link_message(o)));
}

// The owner's refusals travel as typed statuses (not as text parsed back): 400, 404, 503 with
// Retry-After, each with its reason as the body.
TEST(RelayHls, RefusalsKeepTheirStatus) {
  std::vector<uint8_t> wire;
  const std::vector<std::pair<HlsAnswerHead, std::string>> answers = {
      {{400, {}, 0}, "_HLS_msn 99 is more than two segments ahead of live/cam (next 4)"},
      {{404, {}, 0}, "stream live/cam has no HLS playlist"},
      {{503, {}, 1}, "live/cam playlist: the requested position did not come within 3 target durations"},
      {{200, HlsCachePolicy::max_age(1), 0}, "#EXTM3U\n"},
      {{200, {}, 0}, ""},
  };
  for (const auto& [head, text] : answers) {
    const LinkHlsObject o{head, SharedBuffer::copy_of(std::string_view(text))};
    const auto frame = bytes_of(encode_link_message(o));
    wire.insert(wire.end(), frame.begin(), frame.end());
  }
  for (size_t piece : {size_t{1}, size_t{19}, size_t{20}, wire.size()}) {
    auto got = read_all(wire, piece);
    ASSERT_EQ(got.size(), answers.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const auto& o = std::get<LinkHlsObject>(got[i]);
      EXPECT_EQ(o.head, answers[i].first) << i;
      EXPECT_EQ(o.body ? std::string(o.body->view()) : std::string(), answers[i].second) << i;
    }
  }
}

TEST(RelayHls, AnswerHeadFieldsThatDoNotApplyAreRefused) {
  auto fails = [](HlsAnswerHead head, size_t body = 0, LinkReaderLimits lim = {}) {
    std::vector<uint8_t> wire = bytes_of(link_hls_object_header(head, static_cast<uint32_t>(body)));
    wire.resize(wire.size() + body, 'x');
    LinkFrameReader r([](LinkMessage&&) {}, lim);
    EXPECT_THROW(r.feed(wire), ProtocolError) << head.status;
  };
  fails({0, {}, 0});                                                   // no status
  fails({199, {}, 0});                                                 // not a final status
  fails({600, {}, 0});
  fails({200, {static_cast<HlsCacheKind>(3), 5}, 0});                 // unknown cache kind
  fails({200, {HlsCacheKind::NoCache, 5}, 0});                        // a max-age without caching
  fails({200, {}, 1});                                                 // Retry-After on a 200
  fails({404, HlsCachePolicy::max_age(5), 0});                        // an error is never cached
  LinkReaderLimits small;
  small.max_error_body = 16;
  fails({404, {}, 0}, 17, small);                                      // a reason over the Error limit
  std::vector<uint8_t> ok = bytes_of(link_hls_object_header({404, {}, 0}, 16));
  ok.resize(ok.size() + 16, 'x');
  EXPECT_EQ(read_all(ok, 3, small).size(), 1u);
}

TEST(LinkRequest, KickAndDrop) {
  EXPECT_EQ(parse_link_request("KICK 73014444033"), LinkRequest(LinkKickRequest{73014444033ull}));
  EXPECT_EQ(parse_link_request("KICK 18446744073709551615"), LinkRequest(LinkKickRequest{UINT64_MAX}));
  EXPECT_EQ(parse_link_request("DROP live/cam"), LinkRequest(LinkDropRequest{"live", "cam"}));
  EXPECT_EQ(format_link_request(LinkKickRequest{42}), "KICK 42\n");
  EXPECT_EQ(format_link_request(LinkDropRequest{"live", "cam"}), "DROP live/cam\n");
  EXPECT_EQ(parse_link_request("RECORD live/cam start"), LinkRequest(LinkRecordRequest{"live", "cam", true}));
  EXPECT_EQ(format_link_request(LinkRecordRequest{"live", "cam", false}), "RECORD live/cam stop\n");
  EXPECT_THROW(parse_link_request("RECORD live/cam pause"), ProtocolError);
  for (const char* bad : {"KICK", "KICK 01", "KICK -1", "KICK 18446744073709551616", "KICK 1 2", "KICK x",
                          "DROP", "DROP live", "DROP live/cam extra"}) {
    EXPECT_THROW(parse_link_request(bad), ProtocolError) << bad;
  }
}

TEST(LinkRequest, RelayAddAndDel) {
  const LinkRelayAddRequest add{"r42", "pull", "live", "mirror", "rtmp://127.0.0.1:1935/live/cam"};
  EXPECT_EQ(parse_link_request("RELAY ADD r42 pull live/mirror rtmp://127.0.0.1:1935/live/cam"), LinkRequest(add));
  EXPECT_EQ(format_link_request(add), "RELAY ADD r42 pull live/mirror rtmp://127.0.0.1:1935/live/cam\n");
  EXPECT_EQ(parse_link_request("RELAY DEL r-4_2"), LinkRequest(LinkRelayDelRequest{"r-4_2"}));
  EXPECT_EQ(format_link_request(LinkRelayDelRequest{"r42"}), "RELAY DEL r42\n");
  for (const char* bad : {"RELAY", "RELAY DEL", "RELAY DEL a/b", "RELAY DEL r1 x", "RELAY ADD r1 dvr live/x rtmp://h/a",
                          "RELAY ADD r1 pull live rtmp://h/a", "RELAY ADD r1 pull live/x", "RELAY MOVE r1",
                          "RELAY ADD r1 pull live/x rtmp://h/a extra"}) {
    EXPECT_THROW(parse_link_request(bad), ProtocolError) << bad;
  }
  EXPECT_THROW(parse_link_request("RELAY DEL " + std::string(65, 'a')), ProtocolError);
}

}  // namespace
}  // namespace rill::protocol
