#include "rill/protocol/flv_tag.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rill/protocol/amf0.h"
#include "rill/protocol/flv_file.h"

using namespace rill::protocol;
using Bytes = std::vector<uint8_t>;

namespace {

template <typename F>
void expect_error(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "expected ProtocolError containing \"" << part << "\"";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "message: " << e.what();
  }
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes fcc(const char* s) { return Bytes{uint8_t(s[0]), uint8_t(s[1]), uint8_t(s[2]), uint8_t(s[3])}; }

const Bytes kNalu{0x00, 0x00, 0x00, 0x02, 0x09, 0xF0};

}  // namespace

// ----- legacy video ----------------------------------------------------------------------------

TEST(FlvVideo, AvcKeyframe) {
  auto i = parse_video_tag(cat({{0x17, 0x01, 0x00, 0x00, 0x00}, kNalu}));
  EXPECT_EQ(i.codec, FlvVideoCodec::H264);
  EXPECT_EQ(i.codec_id, 7);
  EXPECT_EQ(i.frame_type, 1);
  EXPECT_FALSE(i.is_enhanced);
  EXPECT_TRUE(i.is_keyframe);
  EXPECT_TRUE(i.is_coded_frame);
  EXPECT_FALSE(i.is_sequence_header);
  EXPECT_EQ(i.composition_time_ms, 0);
  EXPECT_EQ(i.payload_offset, 5u);
}

TEST(FlvVideo, AvcInterFrameWithCts) {
  auto i = parse_video_tag(cat({{0x27, 0x01, 0x00, 0x00, 0x50}, kNalu}));
  EXPECT_EQ(i.codec, FlvVideoCodec::H264);
  EXPECT_EQ(i.frame_type, 2);
  EXPECT_FALSE(i.is_keyframe);
  EXPECT_TRUE(i.is_coded_frame);
  EXPECT_EQ(i.composition_time_ms, 80);
  // Negative composition time (SI24): -33 = 0xFFFFDF; and the extremes.
  EXPECT_EQ(parse_video_tag(Bytes{0x27, 0x01, 0xFF, 0xFF, 0xDF}).composition_time_ms, -33);
  EXPECT_EQ(parse_video_tag(Bytes{0x27, 0x01, 0x80, 0x00, 0x00}).composition_time_ms, -8388608);
  EXPECT_EQ(parse_video_tag(Bytes{0x27, 0x01, 0x7F, 0xFF, 0xFF}).composition_time_ms, 8388607);
  // Disposable inter frame (3).
  EXPECT_FALSE(parse_video_tag(Bytes{0x37, 0x01, 0, 0, 0}).is_keyframe);
}

TEST(FlvVideo, AvcSequenceHeaderAndEnd) {
  auto i = parse_video_tag(Bytes{0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x64, 0x00, 0x1F});
  EXPECT_TRUE(i.is_sequence_header);
  EXPECT_FALSE(i.is_keyframe);  // a config record is not a media keyframe
  EXPECT_FALSE(i.is_coded_frame);
  EXPECT_EQ(i.packet_type, 0);
  EXPECT_EQ(i.payload_offset, 5u);
  // A sequence header with a (non-conforming) composition time is reported as sent.
  EXPECT_EQ(parse_video_tag(Bytes{0x17, 0x00, 0xFF, 0xFF, 0xFE, 0x01}).composition_time_ms, -2);

  auto e = parse_video_tag(Bytes{0x17, 0x02, 0x00, 0x00, 0x00});
  EXPECT_TRUE(e.is_sequence_end);
  EXPECT_FALSE(e.is_coded_frame);
}

TEST(FlvVideo, LegacyHevcAndOtherCodecs) {
  auto h = parse_video_tag(cat({{0x1C, 0x01, 0x00, 0x00, 0x21}, kNalu}));
  EXPECT_EQ(h.codec, FlvVideoCodec::HEVC);
  EXPECT_EQ(h.codec_id, 12);
  EXPECT_TRUE(h.is_keyframe);
  EXPECT_EQ(h.composition_time_ms, 33);
  EXPECT_TRUE(parse_video_tag(Bytes{0x1C, 0x00, 0, 0, 0, 0x01}).is_sequence_header);

  // Sorenson H.263 (2) and VP6 (4): no packet type, payload after one byte.
  auto s = parse_video_tag(Bytes{0x12, 0x00, 0x00, 0x84});
  EXPECT_EQ(s.codec, FlvVideoCodec::Other);
  EXPECT_EQ(s.codec_id, 2);
  EXPECT_TRUE(s.is_keyframe);
  EXPECT_EQ(s.payload_offset, 1u);
  EXPECT_FALSE(parse_video_tag(Bytes{0x24}).is_keyframe);
}

TEST(FlvVideo, CommandFrameIsNotMedia) {
  auto i = parse_video_tag(Bytes{0x57, 0x00});  // frame type 5, AVC, "start of seek"
  EXPECT_TRUE(i.is_command_frame);
  EXPECT_FALSE(i.is_keyframe);
  EXPECT_FALSE(i.is_coded_frame);
  EXPECT_FALSE(i.is_sequence_header);
  auto e = parse_video_tag(Bytes{0xD0, 0x01});  // enhanced, frame type 5: command byte, no FourCC
  EXPECT_TRUE(e.is_enhanced);
  EXPECT_TRUE(e.is_command_frame);
  EXPECT_FALSE(e.is_keyframe);
  EXPECT_EQ(e.payload_offset, 1u);
}

TEST(FlvVideo, ShortBodiesThrowWithContext) {
  expect_error([] { parse_video_tag(Bytes{}); }, "video tag: 0 bytes");
  expect_error([] { parse_video_tag(Bytes{0x17}); }, "video tag: 1 byte, expected at least 5 for AVC");
  expect_error(
      [] {
        parse_video_tag(Bytes{0x27, 0x01, 0x00, 0x00});
      },
      "4 bytes, expected at least 5 for AVC");
  expect_error([] { parse_video_tag(Bytes{0x1C, 0x01}); }, "expected at least 5 for HEVC");
  expect_error(
      [] {
        parse_video_tag(Bytes{0x90, 'h', 'v'});
      },
      "3 bytes, expected at least 5 for an enhanced header");
  expect_error(
      [] {
        parse_video_tag(cat({{0x91}, fcc("hvc1"), {0x00}}));
      },
      "expected at least 8 for hvc1 CodedFrames");
}

// ----- Enhanced RTMP video --------------------------------------------------------------------

TEST(FlvVideo, EnhancedHevcSequenceStartCodedFramesAndX) {
  auto s = parse_video_tag(cat({{0x90}, fcc("hvc1"), {0x01, 0x01, 0x60}}));
  EXPECT_TRUE(s.is_enhanced);
  EXPECT_EQ(s.codec, FlvVideoCodec::HEVC);
  EXPECT_EQ(s.fourcc, kFourccHevc);
  EXPECT_EQ(fourcc_to_string(s.fourcc), "hvc1");
  EXPECT_EQ(s.frame_type, 1);
  EXPECT_TRUE(s.is_sequence_header);
  EXPECT_FALSE(s.is_keyframe);
  EXPECT_EQ(s.payload_offset, 5u);

  auto c = parse_video_tag(cat({{0x91}, fcc("hvc1"), {0x00, 0x00, 0x28}, kNalu}));
  EXPECT_TRUE(c.is_keyframe);
  EXPECT_TRUE(c.is_coded_frame);
  EXPECT_EQ(c.packet_type, 1);
  EXPECT_EQ(c.composition_time_ms, 40);
  EXPECT_EQ(c.payload_offset, 8u);

  auto n = parse_video_tag(cat({{0xA1}, fcc("hvc1"), {0xFF, 0xFF, 0xD8}, kNalu}));
  EXPECT_FALSE(n.is_keyframe);
  EXPECT_EQ(n.frame_type, 2);
  EXPECT_EQ(n.composition_time_ms, -40);

  auto x = parse_video_tag(cat({{0x93}, fcc("hvc1"), kNalu}));  // CodedFramesX: no cts on the wire
  EXPECT_TRUE(x.is_keyframe);
  EXPECT_TRUE(x.is_coded_frame);
  EXPECT_EQ(x.composition_time_ms, 0);
  EXPECT_EQ(x.payload_offset, 5u);
  EXPECT_FALSE(parse_video_tag(cat({{0xA3}, fcc("hvc1"), kNalu})).is_keyframe);

  auto end = parse_video_tag(cat({{0x92}, fcc("hvc1")}));
  EXPECT_TRUE(end.is_sequence_end);
  EXPECT_EQ(end.payload_offset, 5u);
}

TEST(FlvVideo, EnhancedAv1Vp9AndAvc) {
  const Bytes obu{0x12, 0x00, 0x0A, 0x0B};
  auto a = parse_video_tag(cat({{0x91}, fcc("av01"), obu}));
  EXPECT_EQ(a.codec, FlvVideoCodec::AV1);
  EXPECT_TRUE(a.is_keyframe);
  EXPECT_EQ(a.composition_time_ms, 0);
  EXPECT_EQ(a.payload_offset, 5u);  // av01 CodedFrames has no composition time
  EXPECT_TRUE(parse_video_tag(cat({{0x90}, fcc("av01"), {0x81, 0x00}})).is_sequence_header);

  auto v = parse_video_tag(cat({{0x91}, fcc("vp09"), {0x82, 0x49, 0x83}}));
  EXPECT_EQ(v.codec, FlvVideoCodec::VP9);
  EXPECT_TRUE(v.is_keyframe);
  EXPECT_EQ(v.payload_offset, 5u);

  auto h = parse_video_tag(cat({{0x91}, fcc("avc1"), {0x00, 0x00, 0x10}, kNalu}));
  EXPECT_EQ(h.codec, FlvVideoCodec::H264);
  EXPECT_EQ(h.composition_time_ms, 16);
  EXPECT_EQ(h.payload_offset, 8u);

  auto o = parse_video_tag(cat({{0x91}, fcc("vp08"), {0x00}}));
  EXPECT_EQ(o.codec, FlvVideoCodec::Other);
  EXPECT_EQ(o.fourcc, kFourccVp8);
}

TEST(FlvVideo, EnhancedMetadataModExAndMultitrack) {
  // Metadata: frame type ignored, not media.
  auto m = parse_video_tag(
      cat({{0x94}, fcc("hvc1"), {0x02, 0x00, 0x09, 'c', 'o', 'l', 'o', 'r', 'I', 'n', 'f', 'o'}}));
  EXPECT_EQ(m.packet_type, 4);
  EXPECT_FALSE(m.is_coded_frame);
  EXPECT_FALSE(m.is_keyframe);
  EXPECT_FALSE(m.is_sequence_header);
  EXPECT_EQ(m.payload_offset, 5u);

  // ModEx (7): size-1 = 2 -> 3 bytes of TimestampOffsetNano, then modExType 0 | CodedFrames.
  auto x =
      parse_video_tag(cat({{0x97, 0x02, 0x00, 0x01, 0x00, 0x01}, fcc("hvc1"), {0x00, 0x00, 0x05}, kNalu}));
  EXPECT_EQ(x.packet_type, 1);
  EXPECT_TRUE(x.is_keyframe);
  EXPECT_EQ(x.composition_time_ms, 5);
  EXPECT_EQ(x.payload_offset, 13u);
  expect_error([] { parse_video_tag(Bytes{0x97, 0x05, 0x00}); }, "ModEx data");

  // Multitrack (6): OneTrack (0) | CodedFramesX (3), FourCC, then per-track data.
  auto t = parse_video_tag(cat({{0x96, 0x03}, fcc("av01"), {0x00, 0x12, 0x00}}));
  EXPECT_TRUE(t.is_multitrack);
  EXPECT_EQ(t.codec, FlvVideoCodec::Other);
  EXPECT_EQ(t.fourcc, kFourccAv1);
  EXPECT_TRUE(t.is_keyframe);
  EXPECT_EQ(t.payload_offset, 6u);
  // ManyTracksManyCodecs (2): no shared FourCC.
  auto mm = parse_video_tag(Bytes{0x96, 0x20, 0x00});
  EXPECT_TRUE(mm.is_multitrack);
  EXPECT_EQ(mm.fourcc, 0u);
  EXPECT_EQ(mm.payload_offset, 2u);
}

// ----- audio -----------------------------------------------------------------------------------

TEST(FlvAudio, AacSequenceHeaderVsRaw) {
  auto s = parse_audio_tag(Bytes{0xAF, 0x00, 0x12, 0x10});
  EXPECT_EQ(s.codec, FlvAudioCodec::AAC);
  EXPECT_EQ(s.sound_format, 10);
  EXPECT_EQ(s.sound_rate, 3);
  EXPECT_EQ(s.sound_size, 1);
  EXPECT_EQ(s.sound_type, 1);
  EXPECT_TRUE(s.is_sequence_header);
  EXPECT_FALSE(s.is_coded_frame);
  EXPECT_EQ(s.payload_offset, 2u);

  auto r = parse_audio_tag(Bytes{0xAF, 0x01, 0x21, 0x10, 0x04});
  EXPECT_FALSE(r.is_sequence_header);
  EXPECT_TRUE(r.is_coded_frame);
  EXPECT_EQ(r.payload_offset, 2u);

  expect_error([] { parse_audio_tag(Bytes{0xAF}); }, "audio tag: 1 byte, expected at least 2 for AAC");
  expect_error([] { parse_audio_tag(Bytes{}); }, "audio tag: 0 bytes");
}

TEST(FlvAudio, Mp3AndOthers) {
  auto m = parse_audio_tag(Bytes{0x2E, 0xFF, 0xFB, 0x90});
  EXPECT_EQ(m.codec, FlvAudioCodec::MP3);
  EXPECT_EQ(m.sound_rate, 3);
  EXPECT_EQ(m.sound_size, 1);
  EXPECT_EQ(m.sound_type, 0);
  EXPECT_TRUE(m.is_coded_frame);
  EXPECT_EQ(m.payload_offset, 1u);
  EXPECT_EQ(parse_audio_tag(Bytes{0xE2, 0x00}).codec, FlvAudioCodec::MP3);  // MP3 8 kHz (14)
  auto g = parse_audio_tag(Bytes{0x72, 0xD5});                              // G.711 A-law
  EXPECT_EQ(g.codec, FlvAudioCodec::Other);
  EXPECT_EQ(g.sound_format, 7);
  EXPECT_EQ(g.payload_offset, 1u);
}

TEST(FlvAudio, EnhancedAudioPassThrough) {
  auto s = parse_audio_tag(cat({{0x90}, fcc("mp4a"), {0x12, 0x10}}));
  EXPECT_TRUE(s.is_enhanced);
  EXPECT_EQ(s.codec, FlvAudioCodec::AAC);  // E-RTMP mp4a: the legacy AAC payloads
  EXPECT_EQ(fourcc_to_string(s.fourcc), "mp4a");
  EXPECT_TRUE(s.is_sequence_header);
  EXPECT_EQ(s.payload_offset, 5u);
  auto c = parse_audio_tag(cat({{0x91}, fcc("Opus"), {0xFC}}));
  EXPECT_TRUE(c.is_coded_frame);
  EXPECT_FALSE(c.is_sequence_header);
  auto mt = parse_audio_tag(cat({{0x95, 0x11}, fcc("Opus"), {0x00}}));  // Multitrack ManyTracks | CodedFrames
  EXPECT_TRUE(mt.is_multitrack);
  EXPECT_TRUE(mt.is_coded_frame);
  EXPECT_EQ(mt.payload_offset, 6u);
  expect_error([] { parse_audio_tag(Bytes{0x90, 'O'}); }, "expected at least 5 for an enhanced header");
}

// ----- script data ------------------------------------------------------------------------------

namespace {
Bytes metadata_body(bool with_set_data_frame) {
  Bytes b;
  Amf0Encoder e(b);
  if (with_set_data_frame) e.write_string("@setDataFrame");
  e.write_string("onMetaData");
  e.write_value(
      Amf0Value::ecma_array({{"width", Amf0Value::number(1280)}, {"height", Amf0Value::number(720)}}));
  return b;
}
}  // namespace

TEST(FlvScript, MetadataDetectionAndStripping) {
  Bytes plain = metadata_body(false);
  Bytes with = metadata_body(true);
  EXPECT_TRUE(is_metadata(plain));
  EXPECT_TRUE(is_metadata(with));
  EXPECT_EQ(set_data_frame_offset(plain), 0u);
  EXPECT_EQ(set_data_frame_offset(with), 16u);  // 3 + strlen("@setDataFrame")
  EXPECT_EQ(strip_set_data_frame(with), plain);
  EXPECT_EQ(strip_set_data_frame(plain), plain);
  auto values = Amf0Decoder(strip_set_data_frame(with)).decode_all();
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0].as_string(), "onMetaData");
  EXPECT_EQ(values[1].find_number("width"), 1280.0);

  Bytes cue;
  Amf0Encoder(cue).write_string("onCuePoint");
  EXPECT_FALSE(is_metadata(cue));
  Bytes sdf_cue;
  Amf0Encoder(sdf_cue).write_string("@setDataFrame");
  Amf0Encoder(sdf_cue).write_string("onCuePoint");
  EXPECT_FALSE(is_metadata(sdf_cue));
  EXPECT_EQ(strip_set_data_frame(sdf_cue), cue);

  EXPECT_FALSE(is_metadata(Bytes{}));
  EXPECT_FALSE(is_metadata(Bytes{0x02, 0xFF}));
  EXPECT_FALSE(is_metadata(Bytes{0x02, 0x00, 0x0A, 'o', 'n', 'M'}));  // truncated name
  Bytes lone;
  Amf0Encoder(lone).write_string("@setDataFrame");
  EXPECT_FALSE(is_metadata(lone));
  expect_error([&] { strip_set_data_frame(lone); }, "expected a value after \"@setDataFrame\"");
}

// ----- FLV file framing -------------------------------------------------------------------------

TEST(FlvFile, HeaderBytes) {
  auto h = flv_file_header(true, true);
  EXPECT_EQ(Bytes(h.begin(), h.end()), (Bytes{'F', 'L', 'V', 1, 0x05, 0, 0, 0, 9, 0, 0, 0, 0}));
  EXPECT_EQ(flv_file_header(false, true)[4], 0x01);
  EXPECT_EQ(flv_file_header(true, false)[4], 0x04);
}

TEST(FlvFile, SerializeTagByteExact) {
  Bytes body{0xAA, 0xBB, 0xCC};
  auto t = serialize_flv_tag(kFlvTagVideo, 0x00123456, body);
  Bytes expected{0x09, 0x00, 0x00, 0x03, 0x12, 0x34, 0x56, 0x00, 0x00,
                 0x00, 0x00, 0xAA, 0xBB, 0xCC, 0x00, 0x00, 0x00, 0x0E};
  EXPECT_EQ(Bytes(t.span().begin(), t.span().end()), expected);
  EXPECT_EQ(t.size(), flv_tag_size(body.size()));

  // Timestamp above 24 bits: low 24 bits, then the extended (high) byte.
  auto x = serialize_flv_tag(kFlvTagAudio, 0x12345678, body);
  Bytes expected_x{0x08, 0x00, 0x00, 0x03, 0x34, 0x56, 0x78, 0x12, 0x00,
                   0x00, 0x00, 0xAA, 0xBB, 0xCC, 0x00, 0x00, 0x00, 0x0E};
  EXPECT_EQ(Bytes(x.span().begin(), x.span().end()), expected_x);

  auto e = serialize_flv_tag(kFlvTagScript, 0, {});
  EXPECT_EQ(Bytes(e.span().begin(), e.span().end()),
            (Bytes{0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11}));

  uint8_t raw[32];
  EXPECT_EQ(serialize_flv_tag_into(raw, kFlvTagVideo, 0x00123456, body), expected.size());
  EXPECT_EQ(Bytes(raw, raw + expected.size()), expected);

  Bytes too_big(kFlvMaxBodySize + 1);
  expect_error([&] { serialize_flv_tag(kFlvTagVideo, 0, too_big); }, "exceeds the UI24 DataSize maximum");
}

TEST(FlvFile, SerializeFramedForHttpChunk) {
  Bytes body{1, 2, 3};
  auto t = serialize_flv_tag_framed(kFlvTagVideo, 40, body, "12\r\n", "\r\n");  // 0x12 = 18 bytes
  std::string_view v = t->view();
  ASSERT_EQ(v.size(), 4u + 18 + 2);
  EXPECT_EQ(v.substr(0, 4), "12\r\n");
  EXPECT_EQ(v.substr(v.size() - 2), "\r\n");
  auto plain = serialize_flv_tag(kFlvTagVideo, 40, body);
  EXPECT_EQ(v.substr(4, 18), plain->view());
  EXPECT_EQ(t->use_count(), 1u);
}

namespace {
struct Sample {
  uint8_t type;
  uint32_t ts;
  Bytes body;
};

std::vector<Sample> samples() {
  return {{kFlvTagScript, 0, metadata_body(false)},
          {kFlvTagVideo, 0, Bytes{0x17, 0x00, 0, 0, 0, 0x01, 0x64}},
          {kFlvTagAudio, 0, Bytes{0xAF, 0x00, 0x12, 0x10}},
          {kFlvTagVideo, 33, cat({{0x17, 0x01, 0, 0, 0}, kNalu})},
          {kFlvTagAudio, 0x01000000, Bytes{}},
          {kFlvTagVideo, 0xFFFFFFFF, Bytes(300, 0x5A)}};
}

Bytes flv_stream(const std::vector<Sample>& tags) {
  auto h = flv_file_header(true, true);
  Bytes out(h.begin(), h.end());
  for (const auto& s : tags) {
    auto t = serialize_flv_tag(s.type, s.ts, s.body);
    out.insert(out.end(), t.span().begin(), t.span().end());
  }
  return out;
}
}  // namespace

TEST(FlvFile, ReaderRoundTripOneByteAtATime) {
  auto tags = samples();
  Bytes stream = flv_stream(tags);
  FlvFileReader r;
  std::vector<FlvTag> got;
  for (uint8_t b : stream) {
    r.feed(std::span<const uint8_t>(&b, 1));
    while (auto t = r.next()) got.push_back(std::move(*t));
  }
  EXPECT_TRUE(r.header_done());
  EXPECT_TRUE(r.has_audio());
  EXPECT_TRUE(r.has_video());
  ASSERT_EQ(got.size(), tags.size());
  for (size_t i = 0; i < tags.size(); ++i) {
    EXPECT_EQ(got[i].type, tags[i].type) << i;
    EXPECT_EQ(got[i].timestamp_ms, tags[i].ts) << i;
    EXPECT_EQ(got[i].body, tags[i].body) << i;
    EXPECT_FALSE(got[i].filtered);
  }
  // The trailing PreviousTagSize was checked and consumed too.
  EXPECT_EQ(r.buffered(), 0u);
  EXPECT_EQ(r.consumed(), stream.size());

  FlvFileReader whole;
  whole.feed(stream);
  size_t n = 0;
  while (whole.next()) ++n;
  EXPECT_EQ(n, tags.size());
  EXPECT_EQ(whole.buffered(), 0u);
}

TEST(FlvFile, ReaderSkipsLargerDataOffset) {
  Bytes stream{'F', 'L', 'V', 1, 0x01, 0, 0, 0, 12, 0xEE, 0xEE, 0xEE, 0, 0, 0, 0};
  auto t = serialize_flv_tag(kFlvTagVideo, 7, Bytes{0x17, 0x02, 0, 0, 0});
  stream.insert(stream.end(), t.span().begin(), t.span().end());
  FlvFileReader r;
  r.feed(stream);
  auto tag = r.next();
  ASSERT_TRUE(tag);
  EXPECT_EQ(tag->timestamp_ms, 7u);
  EXPECT_FALSE(r.has_audio());
}

TEST(FlvFile, ReaderRejectsGarbage) {
  auto feed_all = [](Bytes b, FlvReaderOptions opt = {}) {
    FlvFileReader r(opt);
    r.feed(b);
    while (r.next()) {
    }
  };
  expect_error(
      [&] {
        feed_all(Bytes{'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P'});
      },
      "expected signature \"FLV\"");
  expect_error([&] { feed_all(Bytes{'F', 'X'}); }, "expected signature");  // early, before 9 bytes
  expect_error([&] { feed_all(Bytes{'F', 'L', 'V', 2, 5, 0, 0, 0, 9}); }, "expected FLV version 1, found 2");
  expect_error(
      [&] {
        feed_all(Bytes{'F', 'L', 'V', 1, 5, 0, 0, 0, 5});
      },
      "DataOffset between 9 and 1024, found 5");
  expect_error([&] { feed_all(Bytes{'F', 'L', 'V', 1, 5, 0x7F, 0, 0, 0}); }, "found 2130706432");

  auto h = flv_file_header(true, true);
  Bytes head(h.begin(), h.end());
  Bytes bad_prev0 = head;
  bad_prev0[12] = 1;
  expect_error([&] { feed_all(bad_prev0); }, "expected PreviousTagSize 0, found 1");

  Bytes stream = flv_stream(samples());
  Bytes bad_type = stream;
  bad_type[13] = 0x07;
  expect_error([&] { feed_all(bad_type); }, "expected tag type 8, 9 or 18, found 7");
  Bytes reserved = stream;
  reserved[13] |= 0x80;
  expect_error([&] { feed_all(reserved); }, "reserved tag bits");

  // Corrupt the first tag's DataSize: the PreviousTagSize check catches the desync.
  Bytes bad_size = stream;
  bad_size[16] = static_cast<uint8_t>(bad_size[16] - 1);
  expect_error([&] { feed_all(bad_size); }, "expected PreviousTagSize");

  FlvReaderOptions small;
  small.max_tag_size = 100;
  expect_error([&] { feed_all(stream, small); }, "exceeds limit 100");

  // Without the PreviousTagSize check, a wrong value is tolerated.
  FlvReaderOptions lax;
  lax.check_previous_tag_size = false;
  EXPECT_NO_THROW(feed_all(bad_prev0, lax));
}
