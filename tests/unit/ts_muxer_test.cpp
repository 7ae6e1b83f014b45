// MPEG-TS muxer (ISO/IEC 13818-1) and CRC-32/MPEG-2.
#include "rill/protocol/ts_muxer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "codec_test_data.h"
#include "rill/protocol/crc32_mpeg.h"
#include "rill/protocol/error.h"

using namespace rill::protocol;
using Bytes = std::vector<uint8_t>;
using namespace rill::testdata;

namespace {

struct Packet {
  uint16_t pid;
  bool pusi;
  uint8_t cc;
  uint8_t afc;
  Bytes af;  // adaptation field after its length byte
  bool has_af;
  Bytes payload;
};

Packet parse(const uint8_t* p) {
  Packet k{};
  k.pid = static_cast<uint16_t>((p[1] & 0x1F) << 8 | p[2]);
  k.pusi = p[1] & 0x40;
  k.afc = (p[3] >> 4) & 3;
  k.cc = p[3] & 0x0F;
  size_t off = 4;
  if (k.afc & 2) {
    k.has_af = true;
    size_t len = p[4];
    k.af.assign(p + 5, p + 5 + len);
    off = 5 + len;
  }
  if (k.afc & 1) k.payload.assign(p + off, p + 188);
  return k;
}

std::vector<Packet> parse_all(const Bytes& ts) {
  EXPECT_EQ(ts.size() % 188, 0u);
  std::vector<Packet> v;
  for (size_t i = 0; i + 188 <= ts.size(); i += 188) {
    EXPECT_EQ(ts[i], 0x47) << "packet " << i / 188;
    v.push_back(parse(&ts[i]));
  }
  return v;
}

// PES payloads of one PID, reassembled.
std::vector<Bytes> pes_of(const std::vector<Packet>& pkts, uint16_t pid) {
  std::vector<Bytes> out;
  for (const auto& k : pkts) {
    if (k.pid != pid) continue;
    if (k.pusi) out.emplace_back();
    if (!out.empty()) out.back().insert(out.back().end(), k.payload.begin(), k.payload.end());
  }
  return out;
}

Bytes packet_with_ff(const Bytes& head) {
  Bytes p = head;
  p.resize(188, 0xFF);
  return p;
}

Bytes avcc(std::initializer_list<Bytes> nals) {
  // Sized up front and filled by index: GCC 12 warns falsely on insert() here (-Wstringop-overflow).
  size_t total = 0;
  for (const auto& n : nals) total += 4 + n.size();
  Bytes out(total);
  size_t at = 0;
  for (const auto& n : nals) {
    const uint32_t s = static_cast<uint32_t>(n.size());
    for (int shift = 24; shift >= 0; shift -= 8) out[at++] = static_cast<uint8_t>(s >> shift);
    for (uint8_t b : n) out[at++] = b;
  }
  return out;
}

TsSample video(int64_t dts, int32_t cts, bool key, const Bytes& data) {
  return {TsSample::Kind::Video, dts, cts, key, data};
}
TsSample audio(int64_t dts, const Bytes& data) { return {TsSample::Kind::Audio, dts, 0, false, data}; }

uint64_t pcr_base_of(const Bytes& af) {  // af[0] = flags, PCR follows
  return uint64_t{af[1]} << 25 | uint64_t{af[2]} << 17 | uint64_t{af[3]} << 9 | uint64_t{af[4]} << 1 |
         af[5] >> 7;
}

}  // namespace

// ---- CRC-32/MPEG-2 ----

TEST(Crc32Mpeg2, CheckValue) {
  std::string_view s = "123456789";
  EXPECT_EQ(crc32_mpeg2({reinterpret_cast<const uint8_t*>(s.data()), s.size()}), 0x0376E6E7u);
  EXPECT_EQ(crc32_mpeg2({}), 0xFFFFFFFFu);
}

TEST(Crc32Mpeg2, SectionWithItsCrcLeavesZeroAndRunsIncrementally) {
  Bytes sec = hex("00b00d0001c100000001f0002ab104b2");  // ffmpeg's PAT section
  EXPECT_EQ(crc32_mpeg2(sec), 0u);
  Bytes body(sec.begin(), sec.end() - 4);
  EXPECT_EQ(crc32_mpeg2(body), 0x2AB104B2u);
  uint32_t part = crc32_mpeg2({body.data(), 5});
  EXPECT_EQ(crc32_mpeg2({body.data() + 5, body.size() - 5}, part), 0x2AB104B2u);
}

// ---- PSI ----

TEST(TsMuxer, PatMatchesFfmpeg) {
  TsMuxer m({});
  Bytes out;
  m.begin_segment(out);
  ASSERT_EQ(out.size(), 2 * 188u);
  Bytes pat(out.begin(), out.begin() + 188);
  EXPECT_EQ(pat, packet_with_ff(hex("474000100000b00d0001c100000001f0002ab104b2")));
}

TEST(TsMuxer, PmtMatchesFfmpegForH264Aac) {
  TsMuxer m({true, true, AudioCodec::AAC});
  Bytes out;
  m.begin_segment(out);
  Bytes pmt(out.begin() + 188, out.end());
  EXPECT_EQ(pmt, packet_with_ff(hex("475000100002b0170001c10000e100f0001be100f0000fe101f0002f44b99b")));
}

TEST(TsMuxer, PmtAudioOnlyMp3AndVideoOnly) {
  {
    TsMuxer m({false, true, AudioCodec::MP3});
    Bytes out;
    m.begin_segment(out);
    auto k = parse(&out[188]);
    ASSERT_EQ(k.pid, 0x1000);
    const Bytes& s = k.payload;  // pointer_field, then the section
    ASSERT_EQ(s[0], 0);
    size_t len = (s[2] & 0x0F) << 8 | s[3];
    EXPECT_EQ(len, 9u + 5u + 4u);
    EXPECT_EQ((s[9] & 0x1F) << 8 | s[10], 0x101);  // PCR_PID = audio
    EXPECT_EQ(s[13], 0x03);                        // MPEG-1 audio
    EXPECT_EQ((s[14] & 0x1F) << 8 | s[15], 0x101);
    EXPECT_EQ(crc32_mpeg2({s.data() + 1, len + 3}), 0u);
  }
  {
    TsMuxer m({true, false, AudioCodec::AAC});
    Bytes out;
    m.begin_segment(out);
    const Bytes s = parse(&out[188]).payload;
    size_t len = (s[2] & 0x0F) << 8 | s[3];
    EXPECT_EQ(len, 9u + 5u + 4u);
    EXPECT_EQ((s[9] & 0x1F) << 8 | s[10], 0x100);
    EXPECT_EQ(s[13], 0x1B);
    EXPECT_EQ(crc32_mpeg2({s.data() + 1, len + 3}), 0u);
  }
}

// ---- PES headers ----

struct PtsCase {
  int64_t ms;
  const char* bytes;  // the 5 PTS bytes, prefix '0010'
};

TEST(TsMuxer, PtsEncodingByteExact) {
  const PtsCase cases[] = {
      {0, "2100010001"},        {10000, "2100377741"},  // 900000 = 90000 * 10
      {50000000, "2930e31a01"},                         // 4.5e9 > 2^32: bit 32 set
      {95443718, "2100010039"},                         // 8589934620 mod 2^33 = 28
      {-1, "2fffffff4d"},                               // -90 mod 2^33
  };
  for (const auto& c : cases) {
    TsMuxer m({false, true, AudioCodec::MP3});
    Bytes out;
    Bytes frame(10, 0xAB);
    m.write(audio(c.ms, frame), out);
    auto pes = pes_of(parse_all(out), 0x101);
    ASSERT_EQ(pes.size(), 1u);
    Bytes want = hex("000001c0001584800500000000 00");
    want.resize(9);
    Bytes ts = hex(c.bytes);
    want.insert(want.end(), ts.begin(), ts.end());
    want.insert(want.end(), frame.begin(), frame.end());
    want[4] = 0;
    want[5] = static_cast<uint8_t>(3 + 5 + frame.size());  // exact PES_packet_length for audio
    EXPECT_EQ(pes[0], want) << c.ms;
  }
}

TEST(TsMuxer, DtsOnlyWhenItDiffers) {
  TsMuxer m({true, false, AudioCodec::AAC});
  m.set_avc_config(kAvcRecord);
  Bytes out;
  m.write(video(10000, 0, false, avcc({{0x41, 0x01}})), out);
  m.write(video(10000, 40, false, avcc({{0x41, 0x02}})), out);
  auto pes = pes_of(parse_all(out), 0x100);
  ASSERT_EQ(pes.size(), 2u);
  // No DTS: PTS_DTS_flags '10', header length 5; PES_packet_length 0 for video.
  EXPECT_EQ(Bytes(pes[0].begin(), pes[0].begin() + 14), hex("000001e00000848005 2100377741"));
  // PTS 10040 ms = 903600 ticks with prefix '0011', DTS 900000 with prefix '0001'.
  EXPECT_EQ(Bytes(pes[1].begin(), pes[1].begin() + 19), hex("000001e0000084c00a 3100379361 1100377741"));
  // Annex B payload: AUD then the slice.
  EXPECT_EQ(Bytes(pes[0].begin() + 14, pes[0].end()), hex("0000000109f0 0000000141 01"));
}

TEST(TsMuxer, AacGetsAdtsHeader) {
  TsMuxer m({false, true, AudioCodec::AAC});
  m.set_aac_config(kAsc);
  Bytes out;
  Bytes au(100, 0x5A);
  m.write(audio(0, au), out);
  auto pes = pes_of(parse_all(out), 0x101);
  ASSERT_EQ(pes.size(), 1u);
  EXPECT_EQ(pes[0][4] << 8 | pes[0][5], 3 + 5 + 7 + 100);
  EXPECT_EQ(Bytes(pes[0].begin() + 14, pes[0].begin() + 21), hex("fff150800d7ffc"));
  EXPECT_EQ(Bytes(pes[0].begin() + 21, pes[0].end()), au);
}

TEST(TsMuxer, AudioFramesOfAGroupShareOnePesWithTheFirstPts) {
  TsMuxer m({false, true, AudioCodec::AAC});
  m.set_aac_config(kAsc);
  const Bytes a(100, 0x5A), b(60, 0x5B), c(120, 0x5C);
  const std::vector<TsSample> group{audio(900, a), audio(923, b), audio(946, c)};
  Bytes out;
  VectorTsSink sink(out);
  m.write_audio(group, sink);
  auto pes = pes_of(parse_all(out), 0x101);
  ASSERT_EQ(pes.size(), 1u);
  EXPECT_EQ(pes[0][4] << 8 | pes[0][5], 3 + 5 + (7 + 100) + (7 + 60) + (7 + 120));
  // PTS of the first frame (900 ms = 81000 at 90 kHz), '0010' PTS only.
  EXPECT_EQ(Bytes(pes[0].begin() + 9, pes[0].begin() + 14), hex("21000578d1"));
  // Each frame behind its own ADTS header, in order; nothing after the last.
  size_t pos = 14;
  for (const Bytes* f : {&a, &b, &c}) {
    ASSERT_LE(pos + 7 + f->size(), pes[0].size());
    EXPECT_EQ(pes[0][pos], 0xFF);
    EXPECT_EQ(pes[0][pos + 1] & 0xF0, 0xF0);
    const size_t frame_length = (pes[0][pos + 3] & 3u) << 11 | pes[0][pos + 4] << 3 | pes[0][pos + 5] >> 5;
    EXPECT_EQ(frame_length, 7 + f->size());
    EXPECT_EQ(Bytes(pes[0].begin() + static_cast<long>(pos + 7),
                    pes[0].begin() + static_cast<long>(pos + 7 + f->size())),
              *f);
    pos += frame_length;
  }
  EXPECT_EQ(pos, pes[0].size());
  EXPECT_EQ(m.stats().audio_written, 3u);
  // A frame ADTS cannot carry fails the group with nothing written.
  const std::vector<TsSample> bad{audio(969, a), audio(992, Bytes(kAdtsMaxPayload + 1, 0))};
  Bytes untouched;
  VectorTsSink untouched_sink(untouched);
  EXPECT_THROW(m.write_audio(bad, untouched_sink), ProtocolError);
  EXPECT_TRUE(untouched.empty());
  EXPECT_EQ(m.stats().audio_written, 3u);
}

// ---- adaptation field: PCR, random access, stuffing ----

TEST(TsMuxer, PcrAndRandomAccessOnKeyframe) {
  TsMuxer m({true, true, AudioCodec::AAC});
  m.set_avc_config(kAvcRecord);
  m.set_aac_config(kAsc);
  Bytes out;
  Bytes idr(1000, 0x11);
  idr[0] = 0x65;
  m.write(video(1000, 0, true, avcc({idr})), out);
  auto pkts = parse_all(out);
  ASSERT_GE(pkts.size(), 6u);
  ASSERT_TRUE(pkts[0].pusi);
  ASSERT_TRUE(pkts[0].has_af);
  EXPECT_EQ(pkts[0].af.size(), 7u);
  EXPECT_EQ(pkts[0].af[0], 0x50);  // random_access_indicator | PCR_flag
  EXPECT_EQ(pcr_base_of(pkts[0].af), uint64_t{(1000 - TsMuxer::kPcrLeadMs) * 90});
  EXPECT_EQ(pkts[0].af[5] & 0x7E, 0x7E);  // reserved bits
  EXPECT_EQ(pkts[0].af[6], 0x00);         // extension 0
  for (size_t i = 1; i + 1 < pkts.size(); ++i) EXPECT_FALSE(pkts[i].has_af) << i;
  // The keyframe carries AUD, SPS, PPS.
  auto pes = pes_of(pkts, 0x100);
  Bytes head = hex("0000000109f0 00000001");
  head.insert(head.end(), kSps.begin(), kSps.end());
  EXPECT_TRUE(std::equal(head.begin(), head.end(), pes[0].begin() + 14));

  // A non-keyframe: PCR only. Audio in an A/V program: random access, no PCR.
  out.clear();
  m.write(video(1040, 0, false, avcc({{0x41, 0x00}})), out);
  m.write(audio(1040, Bytes(50, 1)), out);
  pkts = parse_all(out);
  ASSERT_EQ(pkts.size(), 2u);
  EXPECT_EQ(pkts[0].af[0], 0x10);
  EXPECT_EQ(pkts[1].pid, 0x101);
  EXPECT_EQ(pkts[1].af[0], 0x40);
}

TEST(TsMuxer, PcrHeldAtZeroNearStartAndOnAudioOnly) {
  TsMuxer m({false, true, AudioCodec::MP3});
  Bytes out;
  m.write(audio(50, Bytes(20, 0)), out);
  m.write(audio(5000, Bytes(20, 0)), out);
  auto pkts = parse_all(out);
  ASSERT_EQ(pkts.size(), 2u);
  EXPECT_EQ(pkts[0].af[0], 0x50);
  EXPECT_EQ(pcr_base_of(pkts[0].af), 0u);
  EXPECT_EQ(pcr_base_of(pkts[1].af), uint64_t{(5000 - TsMuxer::kPcrLeadMs) * 90});
}

TEST(TsMuxer, EveryPesSizeIsPacketAlignedAndReassembles) {
  TsMuxer m({false, true, AudioCodec::MP3});
  for (size_t n = 0; n < 800; ++n) {
    Bytes frame(n);
    for (size_t i = 0; i < n; ++i) frame[i] = static_cast<uint8_t>(i * 7 + n);
    Bytes out;
    m.write(audio(static_cast<int64_t>(n) * 26, frame), out);
    auto pkts = parse_all(out);
    auto pes = pes_of(pkts, 0x101);
    ASSERT_EQ(pes.size(), 1u);
    ASSERT_EQ(pes[0].size(), 14 + n) << n;
    EXPECT_TRUE(std::equal(frame.begin(), frame.end(), pes[0].begin() + 14)) << n;
    for (size_t i = 0; i < pkts.size(); ++i) {
      const auto& k = pkts[i];
      EXPECT_EQ(k.pid, 0x101);
      EXPECT_EQ(k.pusi, i == 0);
      for (size_t j = (i == 0 ? 7 : 1); j < k.af.size(); ++j) ASSERT_EQ(k.af[j], 0xFF) << n;
      if (i > 0 && k.has_af && !k.af.empty()) {
        EXPECT_EQ(k.af[0], 0x00);  // no flags
      }
    }
  }
}

TEST(TsMuxer, SingleStuffingByteCase) {
  // Video PES whose last packet needs exactly one byte of adaptation field (length 0).
  TsMuxer m({true, false, AudioCodec::AAC});
  m.set_avc_config(kAvcRecord);
  // First packet: 176 bytes of payload (8-byte AF with PCR); second: 183 -> af length 0.
  // PES = 14 header + 6 AUD + 4 start code + nal bytes = 176 + 183.
  Bytes nal(176 + 183 - 14 - 6 - 4, 0x22);
  nal[0] = 0x41;
  Bytes out;
  m.write(video(0, 0, false, avcc({nal})), out);
  ASSERT_EQ(out.size(), 2 * 188u);
  EXPECT_EQ(out[188 + 3] & 0x30, 0x30);
  EXPECT_EQ(out[188 + 4], 0x00);  // adaptation_field_length 0
  EXPECT_EQ(out[188 + 5], 0x22);
}

TEST(TsMuxer, SampleFromItsOwnBytesEqualsTheCopiedAnnexB) {
  // The copy-free path (avcc_annexb_prefix: the sample's length fields become start codes in the
  // packets) against the copying one, forced by an empty NAL unit at the end (which both leave
  // out): the same packets, for NAL units whose length fields fall across packet boundaries.
  const std::vector<size_t> sizes = {1,   2,   3,   5,   150, 160, 170, 175, 176,
                                     177, 178, 179, 180, 183, 184, 185, 400, 1000};
  for (bool key : {false, true}) {
    for (size_t a : sizes) {
      for (size_t b : {size_t{1}, size_t{3}, size_t{184}, size_t{360}}) {
        for (uint8_t first_type : {uint8_t{0x09}, uint8_t{0x41}, uint8_t{0x65}}) {  // AUD, slice, IDR
          Bytes n1(a, 0x11), n2(b, 0x22), n3(7, 0x33);
          n1[0] = first_type;
          n2[0] = 0x41;
          n3[0] = 0x06;
          const Bytes whole = avcc({n1, n2, n3});
          Bytes with_empty = whole;
          with_empty.insert(with_empty.end(), {0, 0, 0, 0});
          TsMuxer direct({true, false, AudioCodec::AAC}), copied({true, false, AudioCodec::AAC});
          direct.set_avc_config(kAvcRecord);
          copied.set_avc_config(kAvcRecord);
          Bytes out_direct, out_copied;
          direct.write(video(40, 0, key, whole), out_direct);
          copied.write(video(40, 0, key, with_empty), out_copied);
          ASSERT_EQ(out_direct, out_copied)
              << "key " << key << " sizes " << a << "/" << b << " type " << int(first_type);
        }
      }
    }
  }
}

// ---- continuity counters ----

TEST(TsMuxer, ContinuityCountersPerPidWrapAndSurviveSegments) {
  TsMuxer m({true, true, AudioCodec::MP3});
  m.set_avc_config(kAvcRecord);
  std::map<uint16_t, int> last;
  std::map<uint16_t, int> count;
  for (int seg = 0; seg < 5; ++seg) {
    Bytes out;
    m.begin_segment(out);
    for (int i = 0; i < 10; ++i) {
      m.write(video(seg * 1000 + i * 40, 0, i == 0, avcc({Bytes(300, 0x41)})), out);
      m.write(audio(seg * 1000 + i * 40, Bytes(90, 0x33)), out);
    }
    for (const auto& k : parse_all(out)) {
      if (last.count(k.pid)) {
        EXPECT_EQ(k.cc, (last[k.pid] + 1) % 16) << "pid " << k.pid;
      } else {
        EXPECT_EQ(k.cc, 0) << "pid " << k.pid;
      }
      last[k.pid] = k.cc;
      ++count[k.pid];
    }
  }
  EXPECT_EQ(count[0x0000], 5);
  EXPECT_EQ(last[0x0000], 4);
  EXPECT_GT(count[0x100], 16);  // wrapped
  EXPECT_EQ(count[0x101], 50);
  EXPECT_EQ(m.stats().video_written, 50u);
  EXPECT_EQ(m.stats().audio_written, 50u);
  EXPECT_EQ(m.stats().packets, static_cast<uint64_t>(count[0] + count[0x1000] + count[0x100] + count[0x101]));
}

// ---- skipping and errors ----

TEST(TsMuxer, SkipsSamplesWithoutConfigOrStream) {
  TsMuxer m({true, true, AudioCodec::AAC});
  Bytes out;
  m.write(video(0, 0, true, avcc({{0x65, 0x00}})), out);
  m.write(audio(0, Bytes(10, 0)), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(m.stats().skipped_no_config, 2u);
  TsMuxer a({false, true, AudioCodec::MP3});
  a.write(video(0, 0, true, avcc({{0x65, 0x00}})), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(a.stats().skipped_no_stream, 1u);
  EXPECT_EQ(a.stats().samples_skipped(), 1u);
  a.write(audio(0, Bytes(10, 0)), out);  // MP3 needs no config
  EXPECT_EQ(a.stats().samples_written(), 1u);
}

TEST(TsMuxer, MalformedSampleThrowsAndChangesNothing) {
  TsMuxer m({true, true, AudioCodec::AAC});
  m.set_avc_config(kAvcRecord);
  m.set_aac_config(kAsc);
  Bytes out;
  m.write(video(0, 0, true, avcc({{0x65, 0x00}})), out);
  Bytes before = out;
  Bytes bad = avcc({{0x41, 0x00}});
  bad[3] = 9;  // NAL length past the end
  EXPECT_THROW(m.write(video(40, 0, false, bad), out), ProtocolError);
  EXPECT_THROW(m.write(audio(40, Bytes(kAdtsMaxPayload + 1, 0)), out), ProtocolError);
  EXPECT_EQ(out, before);
  m.write(video(80, 0, false, avcc({{0x41, 0x00}})), out);
  auto pkts = parse_all(out);
  EXPECT_EQ(pkts.back().cc, (pkts.front().cc + 1) % 16);  // counter did not move on the throws
}

TEST(TsMuxer, BadConfigThrowsAndClears) {
  TsMuxer m({true, true, AudioCodec::AAC});
  m.set_avc_config(kAvcRecord);
  m.set_aac_config(kAsc);
  EXPECT_THROW(m.set_avc_config(Bytes{0x01, 0x42}), ProtocolError);
  EXPECT_FALSE(m.has_avc_config());
  EXPECT_THROW(m.set_aac_config(Bytes{0x12, 0x00}), ProtocolError);  // channel config 0 (PCE)
  EXPECT_FALSE(m.has_aac_config());
  Bytes out;
  m.write(audio(0, Bytes(10, 0)), out);
  EXPECT_TRUE(out.empty());
  m.set_aac_config(Bytes{0x11, 0x88});  // config changes mid-stream: 48 kHz mono
  m.write(audio(0, Bytes(10, 0)), out);
  auto pes = pes_of(parse_all(out), 0x101);
  EXPECT_EQ(Bytes(pes[0].begin() + 14, pes[0].begin() + 17), hex("fff14c"));
}
