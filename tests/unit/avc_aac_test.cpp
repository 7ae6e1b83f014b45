// AVC configuration record / SPS / AVCC→Annex B, and AAC AudioSpecificConfig / ADTS.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "rill/protocol/aac.h"
#include "rill/protocol/avc.h"
#include "rill/protocol/error.h"

using namespace rill::protocol;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes hex(const char* s) {
  Bytes b;
  auto nib = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  while (*s) {
    if (*s == ' ') { ++s; continue; }
    b.push_back(static_cast<uint8_t>(nib(s[0]) << 4 | nib(s[1])));
    s += 2;
  }
  return b;
}

// Parameter sets x264 writes (ffmpeg -c:v libx264), with their picture sizes.
const Bytes kSps1080High = hex("67640028acd940780227e5c044000003000400000300503c60c658");
const Bytes kPps1080High = hex("68ebe3cb22c0");
const Bytes kSps720Base = hex("6742c01fd9005005bb011000000300100000030140f1832480");
const Bytes kSps642x362Main = hex("674d4016eca05217f1126022000003000200000300281e2c5b2c");

Bytes make_record(const Bytes& sps, const Bytes& pps, uint8_t length_size_minus1 = 3) {
  Bytes r = {0x01, sps[1], sps[2], sps[3], static_cast<uint8_t>(0xFC | length_size_minus1), 0xE1};
  r.push_back(static_cast<uint8_t>(sps.size() >> 8));
  r.push_back(static_cast<uint8_t>(sps.size()));
  r.insert(r.end(), sps.begin(), sps.end());
  r.push_back(0x01);
  r.push_back(static_cast<uint8_t>(pps.size() >> 8));
  r.push_back(static_cast<uint8_t>(pps.size()));
  r.insert(r.end(), pps.begin(), pps.end());
  return r;
}

// AVCC sample from NAL units with 4-byte (or `ls`-byte) lengths.
Bytes avcc(std::initializer_list<Bytes> nals, int ls = 4) {
  // Sized up front and filled by index: GCC 12 warns falsely on insert() here (-Wstringop-overflow).
  size_t total = 0;
  for (const auto& n : nals) total += static_cast<size_t>(ls) + n.size();
  Bytes out(total);
  size_t at = 0;
  for (const auto& n : nals) {
    for (int i = ls - 1; i >= 0; --i) out[at++] = static_cast<uint8_t>(n.size() >> (8 * i));
    for (uint8_t b : n) out[at++] = b;
  }
  return out;
}

Bytes annexb(std::initializer_list<Bytes> nals) {
  Bytes out;
  for (const auto& n : nals) {
    out.insert(out.end(), {0, 0, 0, 1});
    out.insert(out.end(), n.begin(), n.end());
  }
  return out;
}

const Bytes kAud = {0x09, 0xF0};
const Bytes kIdr = {0x65, 0x88, 0x84, 0x00, 0x33};
const Bytes kSlice = {0x41, 0x9A, 0x02, 0x11};
const Bytes kSei = {0x06, 0x05, 0x01, 0xAA, 0x80};

}  // namespace

// ---- AVCDecoderConfigurationRecord ----

TEST(AvcConfig, ParsesRecord) {
  Bytes rec = make_record(kSps1080High, kPps1080High);
  AvcConfig c = parse_avc_config(rec);
  EXPECT_EQ(c.profile, 0x64);
  EXPECT_EQ(c.profile_compatibility, 0x00);
  EXPECT_EQ(c.level, 0x28);
  EXPECT_EQ(c.nalu_length_size, 4);
  ASSERT_EQ(c.sps.size(), 1u);
  ASSERT_EQ(c.pps.size(), 1u);
  EXPECT_EQ(c.sps[0], kSps1080High);
  EXPECT_EQ(c.pps[0], kPps1080High);
}

TEST(AvcConfig, LengthSizes) {
  EXPECT_EQ(parse_avc_config(make_record(kSps720Base, kPps1080High, 0)).nalu_length_size, 1);
  EXPECT_EQ(parse_avc_config(make_record(kSps720Base, kPps1080High, 1)).nalu_length_size, 2);
  EXPECT_THROW(parse_avc_config(make_record(kSps720Base, kPps1080High, 2)), ProtocolError);
}

TEST(AvcConfig, HighProfileExtensionIgnored) {
  Bytes rec = make_record(kSps1080High, kPps1080High);
  rec.insert(rec.end(), {0xFD, 0xF8, 0xF8, 0x00});  // chroma_format, bit depths, 0 SPS ext
  EXPECT_EQ(parse_avc_config(rec).sps[0], kSps1080High);
}

TEST(AvcConfig, EveryTruncationThrows) {
  Bytes rec = make_record(kSps1080High, kPps1080High);
  for (size_t n = 0; n < rec.size(); ++n) {
    Bytes cut(rec.begin(), rec.begin() + static_cast<long>(n));
    EXPECT_THROW(parse_avc_config(cut), ProtocolError) << "length " << n;
  }
}

TEST(AvcConfig, RejectsBadVersionAndWrongNalTypes) {
  Bytes rec = make_record(kSps1080High, kPps1080High);
  rec[0] = 0;
  EXPECT_THROW(parse_avc_config(rec), ProtocolError);
  EXPECT_THROW(parse_avc_config(make_record(kPps1080High, kPps1080High)), ProtocolError);
  Bytes empty_pps = {0x01, 0x64, 0, 0x28, 0xFF, 0xE1, 0, 1, 0x67, 0x01, 0x00, 0x00};
  EXPECT_THROW(parse_avc_config(empty_pps), ProtocolError);
}

TEST(AvcConfig, ErrorMessageSaysWhat) {
  Bytes rec = make_record(kSps1080High, kPps1080High);
  rec.resize(10);
  try {
    parse_avc_config(rec);
    FAIL();
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("SPS"), std::string::npos) << e.what();
  }
}

// ---- SPS ----

TEST(AvcSps, PictureSizes) {
  AvcSpsInfo a = parse_avc_sps(kSps1080High);  // 1920x1088 cropped to 1080
  EXPECT_EQ(a.profile_idc, 100);
  EXPECT_EQ(a.level_idc, 40);
  EXPECT_EQ(a.width, 1920u);
  EXPECT_EQ(a.height, 1080u);
  AvcSpsInfo b = parse_avc_sps(kSps720Base);
  EXPECT_EQ(b.profile_idc, 66);
  EXPECT_EQ(b.width, 1280u);
  EXPECT_EQ(b.height, 720u);
  AvcSpsInfo c = parse_avc_sps(kSps642x362Main);
  EXPECT_EQ(c.width, 642u);
  EXPECT_EQ(c.height, 362u);
}

TEST(AvcSps, TruncatedOrWrongTypeThrows) {
  EXPECT_THROW(parse_avc_sps(kPps1080High), ProtocolError);
  EXPECT_THROW(parse_avc_sps(Bytes{}), ProtocolError);
  for (size_t n = 1; n < 8; ++n) {
    Bytes cut(kSps1080High.begin(), kSps1080High.begin() + static_cast<long>(n));
    EXPECT_THROW(parse_avc_sps(cut), ProtocolError) << n;
  }
}

// ---- AVCC → Annex B ----

TEST(AnnexB, MultiNaluSample) {
  Bytes out = {0xAB};  // appends
  avcc_to_annexb(avcc({kSei, kIdr, kSlice}), 4, out);
  Bytes want = {0xAB};
  Bytes body = annexb({kSei, kIdr, kSlice});
  want.insert(want.end(), body.begin(), body.end());
  EXPECT_EQ(out, want);
}

TEST(AnnexB, ShortLengthFieldsAndEmptyNalus) {
  Bytes out;
  avcc_to_annexb(avcc({kIdr, {}, kSlice}, 2), 2, out);
  EXPECT_EQ(out, annexb({kIdr, kSlice}));
  out.clear();
  avcc_to_annexb(avcc({kSlice}, 1), 1, out);
  EXPECT_EQ(out, annexb({kSlice}));
  EXPECT_THROW(avcc_to_annexb(avcc({kSlice}, 1), 3, out), ProtocolError);
}

TEST(AnnexB, TruncatedSampleThrowsAndLeavesOutput) {
  Bytes sample = avcc({kIdr, kSlice});
  for (size_t n = 1; n < sample.size(); ++n) {
    if (n == 4 + kIdr.size()) continue;  // a whole first NAL unit is a valid sample
    Bytes cut(sample.begin(), sample.begin() + static_cast<long>(n));
    Bytes out = {1, 2, 3};
    EXPECT_THROW(avcc_to_annexb(cut, 4, out), ProtocolError) << n;
    EXPECT_EQ(out, (Bytes{1, 2, 3}));
  }
}

TEST(AnnexB, AccessUnitGetsAudAndParameterSetsBeforeIdr) {
  AvcConfig cfg = parse_avc_config(make_record(kSps1080High, kPps1080High));
  Bytes out;
  avcc_to_annexb_access_unit(avcc({kSei, kIdr}), cfg, true, out);
  EXPECT_EQ(out, annexb({kAud, kSps1080High, kPps1080High, kSei, kIdr}));
}

TEST(AnnexB, IdrWithoutKeyframeFlagStillGetsParameterSets) {
  AvcConfig cfg = parse_avc_config(make_record(kSps1080High, kPps1080High));
  Bytes out;
  avcc_to_annexb_access_unit(avcc({kIdr}), cfg, false, out);
  EXPECT_EQ(out, annexb({kAud, kSps1080High, kPps1080High, kIdr}));
}

TEST(AnnexB, NonKeyframeGetsOnlyAud) {
  AvcConfig cfg = parse_avc_config(make_record(kSps1080High, kPps1080High));
  Bytes out;
  avcc_to_annexb_access_unit(avcc({kSlice}), cfg, false, out);
  EXPECT_EQ(out, annexb({kAud, kSlice}));
}

TEST(AnnexB, ExistingAudAndParameterSetsNotDuplicated) {
  AvcConfig cfg = parse_avc_config(make_record(kSps1080High, kPps1080High));
  Bytes own_sps = kSps720Base;
  Bytes own_pps = {0x68, 0xCE, 0x3C, 0x80};
  Bytes out;
  avcc_to_annexb_access_unit(avcc({kAud, own_sps, own_pps, kIdr}), cfg, true, out);
  EXPECT_EQ(out, annexb({kAud, own_sps, own_pps, kIdr}));
  out.clear();
  // The sample's AUD stays first; the config's parameter sets follow it.
  avcc_to_annexb_access_unit(avcc({kAud, kSei, kIdr}), cfg, true, out);
  EXPECT_EQ(out, annexb({kAud, kSps1080High, kPps1080High, kSei, kIdr}));
}

TEST(AnnexB, AccessUnitUsesConfigLengthSize) {
  AvcConfig cfg = parse_avc_config(make_record(kSps1080High, kPps1080High, 1));
  Bytes out;
  avcc_to_annexb_access_unit(avcc({kSlice, kSlice}, 2), cfg, false, out);
  EXPECT_EQ(out, annexb({kAud, kSlice, kSlice}));
  Bytes bad = avcc({kSlice}, 2);
  bad[1] = 0xFF;
  Bytes before = out;
  EXPECT_THROW(avcc_to_annexb_access_unit(bad, cfg, true, out), ProtocolError);
  EXPECT_EQ(out, before);
}

// ---- AudioSpecificConfig ----

TEST(AacConfig, LcStereo44100) {
  AacConfig c = parse_aac_config(Bytes{0x12, 0x10});
  EXPECT_EQ(c.object_type, 2);
  EXPECT_EQ(c.sampling_index, 4);
  EXPECT_EQ(c.sampling_frequency, 44100u);
  EXPECT_EQ(c.channel_config, 2);
  EXPECT_FALSE(c.sbr);
}

TEST(AacConfig, LcMono48000) {
  AacConfig c = parse_aac_config(Bytes{0x11, 0x88});
  EXPECT_EQ(c.object_type, 2);
  EXPECT_EQ(c.sampling_index, 3);
  EXPECT_EQ(c.sampling_frequency, 48000u);
  EXPECT_EQ(c.channel_config, 1);
}

TEST(AacConfig, ExplicitFrequency) {
  AacConfig c = parse_aac_config(Bytes{0x17, 0x80, 0x56, 0x22, 0x10});
  EXPECT_EQ(c.object_type, 2);
  EXPECT_EQ(c.sampling_index, 15);
  EXPECT_EQ(c.sampling_frequency, 44100u);
  EXPECT_EQ(c.channel_config, 2);
  AacConfig d = parse_aac_config(Bytes{0x17, 0x80, 0x55, 0xF0, 0x08});
  EXPECT_EQ(d.sampling_frequency, 44000u);
  EXPECT_EQ(d.channel_config, 1);
  EXPECT_THROW(parse_aac_config(Bytes{0x17, 0x80, 0x56, 0x22}), ProtocolError);  // cut in freq
}

TEST(AacConfig, ExplicitSbrSignalling) {
  AacConfig c = parse_aac_config(Bytes{0x2B, 0x11, 0x88});
  EXPECT_TRUE(c.sbr);
  EXPECT_FALSE(c.ps);
  EXPECT_EQ(c.object_type, 2);  // core AAC LC
  EXPECT_EQ(c.sampling_frequency, 24000u);
  EXPECT_EQ(c.extension_sampling_frequency, 48000u);
  EXPECT_EQ(c.channel_config, 2);
}

TEST(AacConfig, EscapedObjectTypeAndErrors) {
  EXPECT_EQ(parse_aac_config(Bytes{0xF8, 0x48, 0x40}).object_type, 34);
  EXPECT_THROW(parse_aac_config(Bytes{}), ProtocolError);
  EXPECT_THROW(parse_aac_config(Bytes{0x12}), ProtocolError);
  EXPECT_THROW(parse_aac_config(Bytes{0x16, 0x90}), ProtocolError);  // index 13 reserved
  EXPECT_THROW(parse_aac_config(Bytes{0x00, 0x10}), ProtocolError);  // object type 0
}

// ---- ADTS ----

TEST(Adts, LcStereo44100) {
  AacConfig c = parse_aac_config(Bytes{0x12, 0x10});
  auto h = make_adts_header(c, 100);  // aac_frame_length 107
  EXPECT_EQ(Bytes(h.begin(), h.end()), (Bytes{0xFF, 0xF1, 0x50, 0x80, 0x0D, 0x7F, 0xFC}));
}

TEST(Adts, LcMono48000) {
  AacConfig c = parse_aac_config(Bytes{0x11, 0x88});
  auto h = make_adts_header(c, 200);  // aac_frame_length 207
  EXPECT_EQ(Bytes(h.begin(), h.end()), (Bytes{0xFF, 0xF1, 0x4C, 0x40, 0x19, 0xFF, 0xFC}));
}

TEST(Adts, FrameLengthField) {
  AacConfig c = parse_aac_config(Bytes{0x12, 0x10});
  for (size_t n : {size_t{0}, size_t{1}, size_t{255}, size_t{2041}, kAdtsMaxPayload}) {
    auto h = make_adts_header(c, n);
    size_t len = (size_t{h[3]} & 3) << 11 | size_t{h[4]} << 3 | h[5] >> 5;
    EXPECT_EQ(len, n + 7);
    EXPECT_EQ(h[5] & 0x1F, 0x1F);  // buffer fullness 0x7FF
    EXPECT_EQ(h[6], 0xFC);
  }
  EXPECT_THROW(make_adts_header(c, kAdtsMaxPayload + 1), ProtocolError);
}

TEST(Adts, ExplicitFrequencyMapsToIndex) {
  auto h = make_adts_header(parse_aac_config(Bytes{0x17, 0x80, 0x56, 0x22, 0x10}), 10);
  EXPECT_EQ((h[2] >> 2) & 0x0F, 4);  // 44100
  EXPECT_THROW(make_adts_header(parse_aac_config(Bytes{0x17, 0x80, 0x55, 0xF0, 0x08}), 10),
               ProtocolError);  // 44000 Hz has no index
}

TEST(Adts, UnrepresentableConfigs) {
  AacConfig c = parse_aac_config(Bytes{0x12, 0x10});
  c.channel_config = 0;  // PCE
  EXPECT_THROW(make_adts_header(c, 10), ProtocolError);
  c.channel_config = 2;
  c.object_type = 34;
  EXPECT_THROW(make_adts_header(c, 10), ProtocolError);
  EXPECT_EQ(aac_sampling_index_for(7350), 12);
  EXPECT_EQ(aac_sampling_index_for(1), -1);
}
