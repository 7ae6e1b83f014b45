#include "rill/protocol/flv_multitrack.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rill/protocol/flv_tag.h"

using namespace rill::protocol;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes fcc(const char* s) { return Bytes{uint8_t(s[0]), uint8_t(s[1]), uint8_t(s[2]), uint8_t(s[3])}; }
Bytes of(std::span<const uint8_t> s) { return Bytes(s.begin(), s.end()); }

void expect_error(const Bytes& body, bool video, const std::string& part) {
  try {
    video ? parse_multitrack_video(body) : parse_multitrack_audio(body);
    ADD_FAILURE() << "expected ProtocolError containing \"" << part << "\"";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "message: " << e.what();
  }
}

const Bytes kNalu{0x00, 0x00, 0x00, 0x02, 0x09, 0xF0};
const Bytes kCts{0x00, 0x00, 0x21};  // composition time 33 ms

}  // namespace

// ----- parsing hand-built bytes: the three AvMultitrackTypes, video and audio --------------------

TEST(FlvMultitrack, VideoOneTrack) {
  // ExHeader | key frame (1) | Multitrack (6); OneTrack (0) | CodedFrames (1); "avc1"; track 2.
  const Bytes body = cat({{0x96, 0x01}, fcc("avc1"), {0x02}, kCts, kNalu});
  const MultitrackTag t = parse_multitrack_video(body);
  EXPECT_TRUE(t.is_video);
  EXPECT_EQ(t.frame_type, kVideoFrameKey);
  EXPECT_EQ(t.type, AvMultitrackType::OneTrack);
  EXPECT_EQ(t.packet_type, 1);
  ASSERT_EQ(t.tracks.size(), 1u);
  EXPECT_EQ(t.tracks[0].track_id, 2);
  EXPECT_EQ(t.tracks[0].fourcc, kFourccAvc);
  EXPECT_EQ(of(t.tracks[0].body), cat({kCts, kNalu}));
}

TEST(FlvMultitrack, VideoManyTracks) {
  // Inter frame (2) | Multitrack; ManyTracks (1) | CodedFramesX (3); "hvc1"; two sized tracks.
  const Bytes body =
      cat({{0xA6, 0x13}, fcc("hvc1"), {0x00, 0x00, 0x00, 0x06}, kNalu, {0x01, 0x00, 0x00, 0x02, 0xAA, 0xBB}});
  const MultitrackTag t = parse_multitrack_video(body);
  EXPECT_EQ(t.frame_type, kVideoFrameInter);
  EXPECT_EQ(t.type, AvMultitrackType::ManyTracks);
  EXPECT_EQ(t.packet_type, 3);
  ASSERT_EQ(t.tracks.size(), 2u);
  EXPECT_EQ(t.tracks[0].track_id, 0);
  EXPECT_EQ(of(t.tracks[0].body), kNalu);
  EXPECT_EQ(t.tracks[1].track_id, 1);
  EXPECT_EQ(t.tracks[1].fourcc, kFourccHevc);
  EXPECT_EQ(of(t.tracks[1].body), (Bytes{0xAA, 0xBB}));
}

TEST(FlvMultitrack, VideoManyTracksManyCodecs) {
  // ManyTracksManyCodecs (2) | SequenceStart (0): no shared FourCC; each track: FourCC, id, size.
  const Bytes body = cat({{0x96, 0x20},
                          fcc("avc1"),
                          {0x00, 0x00, 0x00, 0x01, 0x01},
                          fcc("av01"),
                          {0x05, 0x00, 0x00, 0x02, 0x81, 0x00}});
  const MultitrackTag t = parse_multitrack_video(body);
  EXPECT_EQ(t.type, AvMultitrackType::ManyTracksManyCodecs);
  EXPECT_EQ(t.packet_type, 0);
  ASSERT_EQ(t.tracks.size(), 2u);
  EXPECT_EQ(t.tracks[0].fourcc, kFourccAvc);
  EXPECT_EQ(of(t.tracks[0].body), (Bytes{0x01}));
  EXPECT_EQ(t.tracks[1].track_id, 5);
  EXPECT_EQ(t.tracks[1].fourcc, kFourccAv1);
  EXPECT_EQ(of(t.tracks[1].body), (Bytes{0x81, 0x00}));
}

TEST(FlvMultitrack, AudioAllThreeTypes) {
  // SoundFormat 9 | Multitrack (5).
  // The parsed tracks are views into the tag's bytes: each tag is kept in a named buffer.
  const Bytes one_bytes = cat({{0x95, 0x01}, fcc("Opus"), {0x03, 0xFC}});
  const MultitrackTag one = parse_multitrack_audio(one_bytes);
  EXPECT_FALSE(one.is_video);
  EXPECT_EQ(one.type, AvMultitrackType::OneTrack);
  ASSERT_EQ(one.tracks.size(), 1u);
  EXPECT_EQ(one.tracks[0].track_id, 3);
  EXPECT_EQ(one.tracks[0].fourcc, kFourccOpus);

  const Bytes many_bytes = cat(
      {{0x95, 0x10}, fcc("mp4a"), {0x00, 0x00, 0x00, 0x02, 0x12, 0x10, 0x01, 0x00, 0x00, 0x02, 0x11, 0x90}});
  const MultitrackTag many = parse_multitrack_audio(many_bytes);
  EXPECT_EQ(many.type, AvMultitrackType::ManyTracks);
  EXPECT_EQ(many.packet_type, 0);
  ASSERT_EQ(many.tracks.size(), 2u);
  EXPECT_EQ(of(many.tracks[1].body), (Bytes{0x11, 0x90}));

  const Bytes codecs_bytes = cat({{0x95, 0x21},
                                  fcc("mp4a"),
                                  {0x00, 0x00, 0x00, 0x01, 0x21},
                                  fcc("Opus"),
                                  {0x01, 0x00, 0x00, 0x01, 0xFC}});
  const MultitrackTag codecs = parse_multitrack_audio(codecs_bytes);
  EXPECT_EQ(codecs.type, AvMultitrackType::ManyTracksManyCodecs);
  ASSERT_EQ(codecs.tracks.size(), 2u);
  EXPECT_EQ(codecs.tracks[0].fourcc, kFourccAac);
  EXPECT_EQ(codecs.tracks[1].fourcc, kFourccOpus);
}

TEST(FlvMultitrack, ModExBeforeMultitrack) {
  // ModEx (7): size 2+1, TimestampOffsetNano data, then (type 0 | Multitrack 6).
  const Bytes body = cat({{0x97, 0x02, 0x01, 0x86, 0xA0, 0x06, 0x01}, fcc("avc1"), {0x00}, kCts, kNalu});
  const MultitrackTag t = parse_multitrack_video(body);
  ASSERT_EQ(t.tracks.size(), 1u);
  EXPECT_EQ(of(t.tracks[0].body), cat({kCts, kNalu}));
}

TEST(FlvMultitrack, ErrorsNameOffsetAndExpectation) {
  expect_error(cat({{0x17, 0x01, 0x00, 0x00, 0x00}, kNalu}), true,
               "offset 0: expected a Multitrack packet type");
  expect_error(cat({{0x96, 0x31}, fcc("avc1"), {0x00}}), true, "offset 1: reserved AvMultitrackType 3");
  expect_error(cat({{0x96, 0x06}, fcc("avc1"), {0x00}}), true, "found Multitrack again");
  expect_error(cat({{0x96, 0x01}, fcc("avc1")}), true, "offset 6: expected a track, found 0 bytes");
  expect_error(cat({{0x96, 0x11}, fcc("avc1"), {0x00, 0x00}}), true,
               "offset 7: expected a UI24 track size, found 1 byte");
  expect_error(cat({{0x96, 0x11}, fcc("avc1"), {0x04, 0x00, 0x00, 0x09, 0x01}}), true,
               "offset 10: track 4 size 9 runs past the end of the tag (1 bytes left)");
  expect_error(cat({{0x95, 0x20, 0x6D, 0x70}}), false,
               "offset 2: expected the track's FourCC, found 2 bytes");
  expect_error(Bytes{0xAF, 0x01, 0x21}, false, "multitrack audio tag: offset 0");
}

// ----- writing and re-framing ---------------------------------------------------------------

TEST(FlvMultitrack, WriteMatchesHandBuiltBytes) {
  const Bytes a = cat({kCts, kNalu}), b{0x00, 0x00, 0x00, 0xAA};
  MultitrackTag t;
  t.is_video = true;
  t.frame_type = kVideoFrameKey;
  t.type = AvMultitrackType::ManyTracks;
  t.packet_type = 1;
  t.tracks = {{0, kFourccAvc, a}, {1, kFourccAvc, b}};
  EXPECT_EQ(write_multitrack_tag(t),
            cat({{0x96, 0x11}, fcc("avc1"), {0x00, 0x00, 0x00, 0x09}, a, {0x01, 0x00, 0x00, 0x04}, b}));

  t.type = AvMultitrackType::OneTrack;
  EXPECT_THROW(write_multitrack_tag(t), ProtocolError);  // two tracks
  t.type = AvMultitrackType::ManyTracks;
  t.tracks[1].fourcc = kFourccHevc;
  EXPECT_THROW(write_multitrack_tag(t), ProtocolError);  // two codecs need ManyTracksManyCodecs
}

TEST(FlvMultitrack, ReframeAvcAndAacAsLegacy) {
  MultitrackTag v;
  v.is_video = true;
  v.frame_type = kVideoFrameKey;
  v.packet_type = 1;  // CodedFrames: the body carries the composition time
  const Bytes cf = cat({kCts, kNalu});
  EXPECT_EQ(single_track_tag(v, {0, kFourccAvc, cf}), cat({{0x17, 0x01}, kCts, kNalu}));
  v.packet_type = 3;  // CodedFramesX: composition time 0
  EXPECT_EQ(single_track_tag(v, {0, kFourccAvc, kNalu}), cat({{0x17, 0x01, 0x00, 0x00, 0x00}, kNalu}));
  v.packet_type = 0;  // SequenceStart: AVCPacketType 0
  EXPECT_EQ(single_track_tag(v, {0, kFourccAvc, Bytes{0x01, 0x64}}),
            (Bytes{0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x64}));

  MultitrackTag a;
  a.packet_type = 0;
  EXPECT_EQ(single_track_tag(a, {0, kFourccAac, Bytes{0x12, 0x10}}), (Bytes{0xAF, 0x00, 0x12, 0x10}));
  a.packet_type = 1;
  EXPECT_EQ(single_track_tag(a, {0, kFourccAac, Bytes{0x21}}), (Bytes{0xAF, 0x01, 0x21}));
}

TEST(FlvMultitrack, ReframeOtherCodecsAsEnhancedSingleTrack) {
  MultitrackTag v;
  v.is_video = true;
  v.frame_type = kVideoFrameInter;
  v.packet_type = 1;
  const Bytes hv = single_track_tag(v, {0, kFourccHevc, cat({kCts, kNalu})});
  EXPECT_EQ(hv, cat({{0xA1}, fcc("hvc1"), kCts, kNalu}));
  const VideoTagInfo vi = parse_video_tag(hv);
  EXPECT_EQ(vi.codec, FlvVideoCodec::HEVC);
  EXPECT_EQ(vi.composition_time_ms, 33);

  MultitrackTag a;
  a.packet_type = 1;
  EXPECT_EQ(single_track_tag(a, {0, kFourccOpus, Bytes{0xFC}}), cat({{0x91}, fcc("Opus"), {0xFC}}));
  a.packet_type = 2;  // AAC SequenceEnd has no legacy form
  EXPECT_EQ(single_track_tag(a, {0, kFourccAac, Bytes{}}), cat({{0x92}, fcc("mp4a")}));
}

TEST(FlvMultitrack, RoundTripLegacyTagsThroughEveryType) {
  // Legacy single-track tags -> track payloads -> multitrack tag -> parse -> re-framed tags: the
  // same bytes again, for each multitrack type.
  const std::vector<Bytes> video = {cat({{0x17, 0x00, 0x00, 0x00, 0x00}, {0x01, 0x64, 0x00}}),
                                    cat({{0x17, 0x01}, kCts, kNalu}),
                                    cat({{0x27, 0x01, 0xFF, 0xFF, 0xDF}, kNalu})};
  const std::vector<Bytes> audio = {Bytes{0xAF, 0x00, 0x12, 0x10}, Bytes{0xAF, 0x01, 0x21, 0x22}};
  for (auto type :
       {AvMultitrackType::OneTrack, AvMultitrackType::ManyTracks, AvMultitrackType::ManyTracksManyCodecs}) {
    for (bool is_video : {true, false}) {
      for (const Bytes& tag : is_video ? video : audio) {
        const SingleTrackParts p = single_track_parts(tag, is_video);
        MultitrackTag mt;
        mt.is_video = is_video;
        mt.frame_type = p.frame_type;
        mt.type = type;
        mt.packet_type = p.packet_type;
        const size_t n = type == AvMultitrackType::OneTrack ? 1 : 3;
        for (uint8_t id = 0; id < n; ++id)
          mt.tracks.push_back({uint8_t(id + 4), p.track.fourcc, p.track.body});
        const Bytes wire = write_multitrack_tag(mt);
        const MultitrackTag back = is_video ? parse_multitrack_video(wire) : parse_multitrack_audio(wire);
        ASSERT_EQ(back.tracks.size(), n);
        EXPECT_EQ(back.type, type);
        for (size_t i = 0; i < n; ++i) {
          EXPECT_EQ(back.tracks[i].track_id, i + 4);
          EXPECT_EQ(single_track_tag(back, back.tracks[i]), tag) << "type " << int(type) << " track " << i;
        }
        EXPECT_EQ(write_multitrack_tag(back), wire);
      }
    }
  }
}

TEST(FlvMultitrack, SingleTrackPartsOfEnhancedTags) {
  const Bytes hv_tag = cat({{0x91}, fcc("hvc1"), kCts, kNalu}), av1_tag = cat({{0x91}, fcc("av01"), kNalu});
  const SingleTrackParts hv = single_track_parts(hv_tag, true);  // views into hv_tag
  EXPECT_EQ(hv.track.fourcc, kFourccHevc);
  EXPECT_EQ(of(hv.track.body), cat({kCts, kNalu}));  // keeps the composition time
  const SingleTrackParts av1 = single_track_parts(av1_tag, true);
  EXPECT_EQ(of(av1.track.body), kNalu);
  EXPECT_THROW(single_track_parts(Bytes{0x12, 0x00}, true), ProtocolError);  // Sorenson H.263
  EXPECT_THROW(single_track_parts(cat({{0x95, 0x01}, fcc("Opus"), {0x00, 0xFC}}), false), ProtocolError);
}
