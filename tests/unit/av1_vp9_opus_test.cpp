// AV1, VP9 and Opus: the configuration records (av1C, vpcC, OpusHead/dOps), their fMP4 sample
// entries, the CODECS strings of every codec, and the E-RTMP v2 audio header (FourCCs, packet
// types, ModEx). The records are the bytes ffmpeg 5.1 (Debian 12) writes, made with
//   ffmpeg -f lavfi -i testsrc2=size=160x90:rate=10 -frames:v 5 -c:v libaom-av1 -cpu-used 8 -usage realtime
//   av1.mp4 ffmpeg -f lavfi -i testsrc2=size=160x90:rate=10 -frames:v 5 -c:v libvpx-vp9 -deadline realtime
//   vp9.mp4 ffmpeg -f lavfi -i sine=sample_rate=48000 -t 0.2 -ac 2 -c:a libopus opus.mp4 (and opus.ogg)
// and read out of the files' av1C, vpcC and dOps boxes and the Ogg stream's OpusHead packet.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "codec_test_data.h"
#include "rill/protocol/audio_multichannel.h"
#include "rill/protocol/av1.h"
#include "rill/protocol/codecs_string.h"
#include "rill/protocol/error.h"
#include "rill/protocol/flv_tag.h"
#include "rill/protocol/fmp4_muxer.h"
#include "rill/protocol/opus.h"
#include "rill/protocol/vp9.h"

using namespace rill::protocol;
using namespace rill::testdata;

namespace {

const Bytes kFfmpegAv1C = hex("81000c00 0a0a00000003b4fd936be401");  // + sequence header OBU, 160x90
const Bytes kFfmpegVpcCBox = hex("01000000 000a820202020000");       // version 1, flags 0, record
const Bytes kFfmpegDOps = hex("000201380000bb80000000");             // 2 channels, pre-skip 312
const Bytes kFfmpegOpusHead = hex("4f707573486561640102380180bb0000000000");

// The payload of the first box of `type` in `data` (a byte search: fine for these small inits).
Bytes box_payload(const Bytes& data, const char* type) {
  const std::string t(type, 4);
  auto it = std::search(data.begin(), data.end(), t.begin(), t.end());
  if (it == data.end() || it - data.begin() < 4) return {};
  const size_t at = static_cast<size_t>(it - data.begin()) - 4;
  const size_t size =
      size_t{data[at]} << 24 | size_t{data[at + 1]} << 16 | size_t{data[at + 2]} << 8 | data[at + 3];
  if (size < 8 || at + size > data.size()) return {};
  return Bytes(data.begin() + static_cast<std::ptrdiff_t>(at + 8),
               data.begin() + static_cast<std::ptrdiff_t>(at + size));
}

Bytes fcc(const char* s) { return Bytes{uint8_t(s[0]), uint8_t(s[1]), uint8_t(s[2]), uint8_t(s[3])}; }
Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST(Av1Config, ParsesFfmpegRecordAndSequenceHeaderSize) {
  const Av1Config c = parse_av1_config(kFfmpegAv1C);
  EXPECT_EQ(c.seq_profile, 0);
  EXPECT_EQ(c.seq_level_idx_0, 0);
  EXPECT_FALSE(c.seq_tier_0);
  EXPECT_EQ(c.bit_depth(), 8);
  EXPECT_TRUE(c.chroma_subsampling_x);
  EXPECT_TRUE(c.chroma_subsampling_y);
  EXPECT_EQ(c.config_obus.size(), 12u);
  const Av1FrameSize s = av1_frame_size(c.config_obus);
  EXPECT_EQ(s.width, 160u);
  EXPECT_EQ(s.height, 90u);
  EXPECT_THROW(parse_av1_config(hex("810000")), ProtocolError);
  EXPECT_THROW(parse_av1_config(hex("01000c00")), ProtocolError);  // marker 0
  EXPECT_THROW(av1_frame_size(hex("3200")), ProtocolError);        // a frame header, no sequence header
  EXPECT_THROW(av1_frame_size(hex("0a05 0000")), ProtocolError);   // size past the data
}

// The record rill-bench builds from a sequence header OBU is the one ffmpeg writes, for 4:2:0
// 8-bit (profile 0), 4:4:4 10-bit (profile 1), 4:2:2 10-bit (profile 2) and monochrome, each made
// with -frames:v 1 -pix_fmt yuv444p10le / yuv422p10le / gray at 64x64 as above.
TEST(Av1Config, RecordFromSequenceHeaderMatchesFfmpeg) {
  for (const Bytes& ffmpeg :
       {kFfmpegAv1C, hex("812040000a0a20000002afff9b5f2840"), hex("814048000a0a40000002afff9b5f2810"),
        hex("81001c000a0a00000002afff9b5f2540")}) {
    const std::span<const uint8_t> obus(ffmpeg.data() + kAv1ConfigFixedSize,
                                        ffmpeg.size() - kAv1ConfigFixedSize);
    Av1Config c = av1_config_from_sequence_header(obus);
    const auto obu = av1_sequence_header_obu(obus);
    EXPECT_EQ(obu.size(), obus.size());
    c.config_obus.assign(obu.begin(), obu.end());
    EXPECT_EQ(write_av1_config(c), ffmpeg);
  }
  // The sequence header found after a temporal delimiter and before a frame OBU.
  const Bytes tu = hex("1200 0a0a00000003b4fd936be401 3203aabbcc");
  EXPECT_EQ(Bytes(av1_sequence_header_obu(tu).begin(), av1_sequence_header_obu(tu).end()),
            hex("0a0a00000003b4fd936be401"));
  EXPECT_EQ(av1_config_from_sequence_header(tu).seq_profile, 0);
  EXPECT_THROW(av1_config_from_sequence_header(hex("0a03 000000")), ProtocolError);  // truncated
  EXPECT_THROW(av1_sequence_header_obu(hex("3203aabbcc")), ProtocolError);           // no sequence header
}

TEST(OpusPacket, SamplesFromTocByte) {
  EXPECT_EQ(opus_packet_samples(hex("fc")), 960u);       // CELT 20 ms, one frame
  EXPECT_EQ(opus_packet_samples(hex("80")), 120u);       // CELT 2.5 ms
  EXPECT_EQ(opus_packet_samples(hex("0b0300")), 2880u);  // SILK 20 ms, code 3 with 3 frames
  EXPECT_EQ(opus_packet_samples(hex("19")), 2 * 2880u);  // SILK 60 ms, code 1: two frames
  EXPECT_EQ(opus_packet_samples(hex("7a")), 2 * 960u);   // hybrid 20 ms, code 2
  EXPECT_THROW(opus_packet_samples(Bytes{}), ProtocolError);
  EXPECT_THROW(opus_packet_samples(hex("03")), ProtocolError);  // code 3 without its count
  EXPECT_THROW(opus_packet_samples(hex("0b00")), ProtocolError);  // code 3 with no frame (M = 0)
  EXPECT_EQ(opus_packet_samples(hex("0b06")), 5760u);            // SILK 20 ms x 6: 120 ms, the most
  EXPECT_THROW(opus_packet_samples(hex("0b07")), ProtocolError);  // 140 ms: over RFC 6716's 120 ms
  EXPECT_THROW(opus_packet_samples(hex("4f70")), ProtocolError);  // the fuzzer's: 48 frames of 20 ms
}

TEST(Av1Config, StripsLeadingTemporalDelimiters) {
  const Bytes tu = hex("1200 1200 0a0a00000003b4fd936be401");
  EXPECT_EQ(av1_strip_temporal_delimiters(tu).size(), 12u);
  const Bytes none = hex("0a0a00000003b4fd936be401");
  EXPECT_EQ(av1_strip_temporal_delimiters(none).size(), none.size());
  EXPECT_TRUE(av1_strip_temporal_delimiters(hex("1200")).empty());
  EXPECT_EQ(av1_strip_temporal_delimiters(hex("12")).size(), 1u);
}

TEST(VpcConfig, ParsesWithAndWithoutFullBoxHeader) {
  for (const Bytes& b : {kFfmpegVpcCBox, Bytes(kFfmpegVpcCBox.begin() + 4, kFfmpegVpcCBox.end())}) {
    const VpcConfig c = parse_vpc_config(b);
    EXPECT_EQ(c.profile, 0);
    EXPECT_EQ(c.level, 10);
    EXPECT_EQ(c.bit_depth, 8);
    EXPECT_EQ(c.chroma_subsampling, 1);
    EXPECT_FALSE(c.video_full_range);
    EXPECT_EQ(c.colour_primaries, 2);
    EXPECT_EQ(write_vpc_config(c), Bytes(kFfmpegVpcCBox.begin() + 4, kFfmpegVpcCBox.end()));
  }
  EXPECT_THROW(parse_vpc_config(hex("000a8202020200")), ProtocolError);    // short
  EXPECT_THROW(parse_vpc_config(hex("000a820202020001")), ProtocolError);  // init data past the end
  EXPECT_THROW(parse_vpc_config(hex("000a920202020000")), ProtocolError);  // bit depth 9
}

TEST(VpcConfig, KeyFrameSize) {
  // frame_marker 2, profile 0, show_existing 0, KEY_FRAME, show 1, error_res 0, sync code,
  // color_space 2 (BT.709), color_range 0, then 159 and 89 (16 bits each).
  const Bytes key = hex("82 49 83 42 40 09 f0 05 90");
  const auto s = vp9_key_frame_size(key);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->width, 160u);
  EXPECT_EQ(s->height, 90u);
  EXPECT_FALSE(vp9_key_frame_size(hex("86 00")));  // frame_type 1: not a key frame
  EXPECT_THROW(vp9_key_frame_size(hex("82 49 83 43 40")), ProtocolError);
  EXPECT_THROW(vp9_key_frame_size(hex("c2")), ProtocolError);  // frame_marker 3
}

TEST(OpusConfig, OpusHeadToDOpsMatchesFfmpeg) {
  const OpusConfig c = parse_opus_head(kFfmpegOpusHead);
  EXPECT_EQ(c.channels, 2);
  EXPECT_EQ(c.pre_skip, 312);
  EXPECT_EQ(c.input_sample_rate, 48000u);
  EXPECT_EQ(write_opus_dops(c), kFfmpegDOps);
  // Mapping family 1 (5.1): stream and coupled counts and the table follow.
  Bytes surround = kFfmpegOpusHead;
  surround[9] = 6;
  surround[18] = 1;
  for (uint8_t b : {4, 2, 0, 4, 1, 2, 3, 5}) surround.push_back(b);
  const OpusConfig s = parse_opus_head(surround);
  EXPECT_EQ(s.stream_count, 4);
  EXPECT_EQ(s.coupled_count, 2);
  EXPECT_EQ(write_opus_dops(s), hex("0006013800 00bb80 0000 01 0402 000401020305"));
  EXPECT_THROW(parse_opus_head(Bytes(kFfmpegOpusHead.begin(), kFfmpegOpusHead.end() - 1)), ProtocolError);
  Bytes bad = kFfmpegOpusHead;
  bad[0] = 'o';
  EXPECT_THROW(parse_opus_head(bad), ProtocolError);
  bad = kFfmpegOpusHead;
  bad[9] = 3;  // family 0 with 3 channels
  EXPECT_THROW(parse_opus_head(bad), ProtocolError);
  surround.pop_back();  // family 1 table cut short
  EXPECT_THROW(parse_opus_head(surround), ProtocolError);
}

TEST(Fmp4SampleEntries, Av1Vp9OpusBoxes) {
  Fmp4Tracks t;
  t.has_video = true;
  t.video_codec = Fmp4VideoCodec::Av1;
  t.video_record = kFfmpegAv1C;
  t.has_audio = true;
  t.audio_codec = Fmp4AudioCodec::Opus;
  t.opus_head = kFfmpegOpusHead;
  Fmp4Muxer av1(t);
  EXPECT_EQ(av1.audio_timescale(), kOpusTimescale);
  const Bytes& init = av1.init_segment();
  EXPECT_EQ(box_payload(init, "av1C"), kFfmpegAv1C);
  EXPECT_EQ(box_payload(init, "dOps"), kFfmpegDOps);
  const Bytes av01 = box_payload(init, "av01");
  ASSERT_GE(av01.size(), 28u);
  EXPECT_EQ(av01[24] << 8 | av01[25], 160);  // width, from the sequence header OBU
  EXPECT_EQ(av01[26] << 8 | av01[27], 90);
  const Bytes opus = box_payload(init, "Opus");
  ASSERT_GE(opus.size(), 28u);
  EXPECT_EQ(opus[17], 2);                                                   // channelcount
  EXPECT_EQ(Bytes(opus.begin() + 24, opus.begin() + 28), hex("bb800000"));  // samplerate 48000 << 16

  // A temporal delimiter before the frame does not reach mdat.
  const Bytes frame = hex("1200 3203 aabbcc");
  ASSERT_TRUE(av1.add(Fmp4Sample{true, 0, 0, true, frame}));
  Bytes seg;
  av1.flush(100, seg);
  EXPECT_EQ(box_payload(seg, "mdat"), hex("3203aabbcc"));

  t.video_codec = Fmp4VideoCodec::Vp9;
  t.video_record = kFfmpegVpcCBox;
  t.width = 160;
  t.height = 90;
  Fmp4Muxer vp9(t);
  EXPECT_EQ(box_payload(vp9.init_segment(), "vpcC"), kFfmpegVpcCBox);  // FullBox v1 + record
  EXPECT_FALSE(box_payload(vp9.init_segment(), "vp09").empty());

  t.opus_head = hex("00");
  EXPECT_THROW(Fmp4Muxer{t}, ProtocolError);
}

TEST(CodecsString, FromConfigurationRecords) {
  struct Case {
    std::string got, want;
  };
  const Bytes high_avc = [] {
    Bytes r = kAvcRecord;
    r[1] = 0x64, r[2] = 0x00, r[3] = 0x1F;  // High, level 3.1
    return r;
  }();
  // hvcC: Main (1), compatibility flags 0x60000000, level 93 (3.1), constraint byte 0xB0.
  Bytes hvcc = {0x01, 0x01, 0x60, 0x00, 0x00, 0x00, 0xB0, 0x00, 0x00, 0x00, 0x00, 0x00,
                0x5D, 0xF0, 0x00, 0xFC, 0xFD, 0xF8, 0xF8, 0x00, 0x00, 0x0F, 0x03};
  for (uint8_t type : {32, 33, 34})
    for (uint8_t b : {static_cast<uint8_t>(0x80 | type), uint8_t{0}, uint8_t{1}, uint8_t{0}, uint8_t{2},
                      static_cast<uint8_t>(type << 1), uint8_t{1}})
      hvcc.push_back(b);
  Bytes hvcc_main10_high = hvcc;
  hvcc_main10_high[1] = 0x22;  // tier High, profile 2 (Main 10)
  hvcc_main10_high[2] = 0x20;  // compatibility flag 2
  hvcc_main10_high[6] = 0x90;
  hvcc_main10_high[7] = 0x01;
  hvcc_main10_high[12] = 120;
  const Bytes av1_l8_10bit = hex("81 08 4c 00");  // profile 0, level 8 (4.0), Main tier, 10-bit
  const Bytes av1_high = hex("81 2d e0 00");      // profile 1, level 13 (5.1), High tier, 12-bit
  const Bytes vp9_31 = hex("00 1f 82 02 02 02 00 00");
  const Bytes vp9_p2_10bit = hex("01000000 02 28 a2 09 10 09 00 00");
  const Case cases[] = {
      {avc_codecs_string(kAvcRecord), "avc1.42C01F"},
      {avc_codecs_string(high_avc), "avc1.64001F"},
      {hevc_codecs_string(hvcc), "hvc1.1.6.L93.B0"},
      {hevc_codecs_string(hvcc_main10_high), "hvc1.2.4.H120.90.1"},
      {av1_codecs_string(kFfmpegAv1C), "av01.0.00M.08"},
      {av1_codecs_string(av1_l8_10bit), "av01.0.08M.10"},
      {av1_codecs_string(av1_high), "av01.1.13H.12"},
      {vp9_codecs_string(vp9_31), "vp09.00.31.08"},
      {vp9_codecs_string(vp9_p2_10bit), "vp09.02.40.10"},
      {vp9_codecs_string(kFfmpegVpcCBox), "vp09.00.10.08"},
      {aac_codecs_string(kAsc), "mp4a.40.2"},
      {aac_codecs_string(hex("2b 92 08 00")), "mp4a.40.5"},  // explicit SBR: 5, 44.1 kHz core
      {opus_codecs_string(), "opus"},
      {join_codecs("av01.0.08M.08", "opus"), "av01.0.08M.08,opus"},
      {join_codecs("", "mp4a.40.2"), "mp4a.40.2"},
  };
  for (const Case& c : cases) EXPECT_EQ(c.got, c.want);
  EXPECT_THROW(av1_codecs_string(hex("81")), ProtocolError);
  EXPECT_THROW(vp9_codecs_string(hex("00")), ProtocolError);
}

TEST(FlvAudioEx, OpusAacFourCcsAllPacketTypes) {
  // SoundFormat 9 (ExHeader) | AudioPacketType, then the FourCC.
  auto start = parse_audio_tag(cat({{0x90}, fcc("Opus"), kFfmpegOpusHead}));
  EXPECT_EQ(start.codec, FlvAudioCodec::Opus);
  EXPECT_TRUE(start.is_enhanced);
  EXPECT_TRUE(start.is_sequence_header);
  EXPECT_EQ(start.payload_offset, 5u);
  auto coded = parse_audio_tag(cat({{0x91}, fcc("Opus"), {0xFC, 0xFF, 0xFE}}));
  EXPECT_TRUE(coded.is_coded_frame);
  EXPECT_FALSE(coded.is_sequence_header);
  auto end = parse_audio_tag(cat({{0x92}, fcc("Opus")}));
  EXPECT_TRUE(end.is_sequence_end);
  EXPECT_FALSE(end.is_coded_frame);
  // MultichannelConfig (4): audioChannelOrder, channelCount, ... follow the FourCC.
  auto mc = parse_audio_tag(cat({{0x94}, fcc("Opus"), {0x01, 0x02, 0x00, 0x00, 0x00, 0x03}}));
  EXPECT_TRUE(mc.is_multichannel_config);
  EXPECT_FALSE(mc.is_coded_frame);
  EXPECT_EQ(mc.payload_offset, 5u);
  // Multitrack (5): OneTrack (0) | CodedFrames (1), FourCC: passed through, codec Other.
  auto mt = parse_audio_tag(cat({{0x95, 0x01}, fcc("Opus"), {0x00, 0x00, 0x00, 0x01, 0xFC}}));
  EXPECT_TRUE(mt.is_multitrack);
  EXPECT_EQ(mt.codec, FlvAudioCodec::Other);
  EXPECT_EQ(mt.fourcc, kFourccOpus);
  // mp4a is AAC, .mp3 is MP3, others stay Other.
  EXPECT_EQ(parse_audio_tag(cat({{0x90}, fcc("mp4a"), kAsc})).codec, FlvAudioCodec::AAC);
  EXPECT_EQ(parse_audio_tag(cat({{0x91}, fcc(".mp3"), {0xFF}})).codec, FlvAudioCodec::MP3);
  EXPECT_EQ(parse_audio_tag(cat({{0x91}, fcc("fLaC"), {0x00}})).codec, FlvAudioCodec::Other);
  EXPECT_THROW(parse_audio_tag(Bytes{0x91, 'O', 'p'}), ProtocolError);
}

TEST(FlvAudioEx, ModExTimestampOffsetNanoIsCarried) {
  // ModEx (7): modExDataSize-1 = 2, UI24 nanoseconds 0x0186A0 (100000 ns), then
  // packetModExType 0 (TimestampOffsetNano) | CodedFrames.
  auto a = parse_audio_tag(cat({{0x97, 0x02, 0x01, 0x86, 0xA0, 0x01}, fcc("Opus"), {0xFC}}));
  EXPECT_EQ(a.timestamp_offset_ns, 100000u);
  EXPECT_TRUE(a.is_coded_frame);
  EXPECT_EQ(a.codec, FlvAudioCodec::Opus);
  EXPECT_EQ(a.payload_offset, 10u);
  auto v = parse_video_tag(cat({{0x97, 0x02, 0x00, 0x00, 0x7B, 0x01}, fcc("av01"), {0x12, 0x00}}));
  EXPECT_EQ(v.timestamp_offset_ns, 123u);
  EXPECT_EQ(v.codec, FlvVideoCodec::AV1);
  EXPECT_TRUE(v.is_keyframe);
  // Another ModEx type (1) is skipped, its data not read as an offset.
  auto other = parse_audio_tag(cat({{0x97, 0x02, 0x01, 0x86, 0xA0, 0x11}, fcc("Opus"), {0xFC}}));
  EXPECT_EQ(other.timestamp_offset_ns, 0u);
  EXPECT_THROW(parse_audio_tag(Bytes{0x97, 0x02, 0x01}), ProtocolError);
}

TEST(FlvAudioEx, MultichannelConfigOrders) {
  // Native (1): 6 channels, AudioChannelMask
  // FrontLeft|FrontRight|FrontCenter|LowFrequency1|BackLeft|BackRight.
  const Bytes native = cat({{0x94}, fcc("Opus"), {0x01, 0x06, 0x00, 0x00, 0x00, 0x3F}});
  const AudioTagInfo a = parse_audio_tag(native);
  ASSERT_TRUE(a.is_multichannel_config);
  const AudioMultichannelConfig n =
      parse_audio_multichannel_config(std::span(native).subspan(a.payload_offset));
  EXPECT_EQ(n.order, AudioChannelOrder::Native);
  EXPECT_EQ(n.channel_count, 6);
  EXPECT_EQ(n.channel_flags, 0x3Fu);
  // Custom (2): one AudioChannel per channel.
  const AudioMultichannelConfig c = parse_audio_multichannel_config(hex("02 03 01 00 02"));
  EXPECT_EQ(c.order, AudioChannelOrder::Custom);
  EXPECT_EQ(c.mapping, hex("010002"));
  // Unspecified (0): the count alone.
  EXPECT_EQ(parse_audio_multichannel_config(hex("00 02")).channel_count, 2);
  EXPECT_THROW(parse_audio_multichannel_config(hex("02 03 01 00")), ProtocolError);
  EXPECT_THROW(parse_audio_multichannel_config(hex("01 06 00 00 00")), ProtocolError);
  EXPECT_THROW(parse_audio_multichannel_config(hex("03 02")), ProtocolError);
  EXPECT_THROW(parse_audio_multichannel_config(hex("00")), ProtocolError);
}
