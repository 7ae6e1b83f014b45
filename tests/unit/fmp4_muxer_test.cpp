// fMP4 muxer (ISO/IEC 14496-12 fragments for HLS, RFC 8216 §3.3) and the MP4 box writer: the
// boxes are walked and their fields checked byte by byte.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "codec_test_data.h"
#include "rill/protocol/error.h"
#include "rill/protocol/fmp4_muxer.h"
#include "rill/protocol/mp4_box_writer.h"

using namespace rill::protocol;
using Bytes = std::vector<uint8_t>;
using namespace rill::testdata;

namespace {

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint64_t be64(const uint8_t* p) { return uint64_t(be32(p)) << 32 | be32(p + 4); }
uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

struct Box {
  std::string type;
  size_t offset = 0;  // of the header
  size_t size = 0;
  const uint8_t* body = nullptr;  // after the 8-byte header
  size_t body_size() const { return size - 8; }
};

// The boxes in [data, data + n), checking that their sizes tile the range exactly.
std::vector<Box> boxes(const uint8_t* data, size_t n, size_t base = 0) {
  std::vector<Box> out;
  size_t off = 0;
  while (off < n) {
    EXPECT_GE(n - off, 8u);
    if (n - off < 8) break;
    Box b;
    b.size = be32(data + off);
    b.type.assign(reinterpret_cast<const char*>(data + off + 4), 4);
    b.offset = base + off;
    b.body = data + off + 8;
    EXPECT_GE(b.size, 8u) << b.type;
    EXPECT_LE(b.size, n - off) << b.type;
    if (b.size < 8 || b.size > n - off) break;
    out.push_back(b);
    off += b.size;
  }
  return out;
}

// The child boxes of `b`, skipping `skip` bytes of its own fields first.
std::vector<Box> children(const Box& b, size_t skip = 0) {
  return boxes(b.body + skip, b.body_size() - skip, b.offset + 8 + skip);
}

std::vector<std::string> types(const std::vector<Box>& v) {
  std::vector<std::string> t;
  for (const auto& b : v) t.push_back(b.type);
  return t;
}


Fmp4Tracks av_tracks() {
  Fmp4Tracks t;
  t.has_video = true;
  t.video_record = kAvcRecord;
  t.has_audio = true;
  t.audio_asc = kAsc;
  return t;
}

}  // namespace

TEST(Mp4BoxWriter, NestsAndPatchesSizes) {
  Bytes out;
  Mp4BoxWriter w(out);
  const size_t outer = w.begin("moof");
  const size_t inner = w.begin_full("mfhd", 1, 0x020304);
  w.u32(7);
  w.end(inner);
  w.end(outer);
  EXPECT_EQ(out, (Bytes{0, 0, 0, 24, 'm', 'o', 'o', 'f', 0, 0, 0, 16, 'm', 'f', 'h', 'd', 1, 2, 3, 4, 0, 0, 0, 7}));
}

TEST(Fmp4Muxer, InitSegmentLayout) {
  Fmp4Muxer m(av_tracks());
  const Bytes& init = m.init_segment();
  const auto top = boxes(init.data(), init.size());
  ASSERT_EQ(types(top), (std::vector<std::string>{"ftyp", "moov"}));
  // ftyp: major iso5, minor 512, compatible iso5 iso6 mp41.
  EXPECT_EQ(Bytes(top[0].body, top[0].body + top[0].body_size()),
            (Bytes{'i', 's', 'o', '5', 0, 0, 2, 0, 'i', 's', 'o', '5', 'i', 's', 'o', '6', 'm', 'p', '4', '1'}));
  const auto moov = children(top[1]);
  ASSERT_EQ(types(moov), (std::vector<std::string>{"mvhd", "trak", "trak", "mvex"}));
  const Box& mvhd = moov[0];
  EXPECT_EQ(mvhd.body_size(), 100u);              // version 0 mvhd
  EXPECT_EQ(be32(mvhd.body + 12), 1000u);         // timescale
  EXPECT_EQ(be32(mvhd.body + 96), 3u);            // next_track_ID
  // Video track: id 1, 90 kHz, avc1 + avcC carrying the record unchanged, size from the SPS.
  const auto vtrak = children(moov[1]);
  ASSERT_EQ(types(vtrak), (std::vector<std::string>{"tkhd", "mdia"}));
  EXPECT_EQ(be32(vtrak[0].body + 12), 1u);  // track_ID
  const uint32_t width = be32(vtrak[0].body + 76) >> 16, height = be32(vtrak[0].body + 80) >> 16;
  EXPECT_GT(width, 0u);
  EXPECT_GT(height, 0u);
  const auto vmdia = children(vtrak[1]);
  ASSERT_EQ(types(vmdia), (std::vector<std::string>{"mdhd", "hdlr", "minf"}));
  EXPECT_EQ(be32(vmdia[0].body + 12), 90000u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(vmdia[1].body + 8), 4), "vide");
  const auto vminf = children(vmdia[2]);
  ASSERT_EQ(types(vminf), (std::vector<std::string>{"vmhd", "dinf", "stbl"}));
  const auto vstbl = children(vminf[2]);
  ASSERT_EQ(types(vstbl), (std::vector<std::string>{"stsd", "stts", "stsc", "stco", "stsz"}));
  const auto vstsd = children(vstbl[0], 8);
  ASSERT_EQ(types(vstsd), (std::vector<std::string>{"avc1"}));
  EXPECT_EQ(be16(vstsd[0].body + 24), width);
  EXPECT_EQ(be16(vstsd[0].body + 26), height);
  const auto avc1 = children(vstsd[0], 78);
  ASSERT_EQ(types(avc1), (std::vector<std::string>{"avcC"}));
  EXPECT_EQ(Bytes(avc1[0].body, avc1[0].body + avc1[0].body_size()), kAvcRecord);
  // Audio track: id 2, 44.1 kHz, mp4a + esds with the ASC as DecoderSpecificInfo.
  const auto atrak = children(moov[2]);
  EXPECT_EQ(be32(atrak[0].body + 12), 2u);
  const auto amdia = children(atrak[1]);
  EXPECT_EQ(be32(amdia[0].body + 12), 44100u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(amdia[1].body + 8), 4), "soun");
  const auto astsd = children(children(children(amdia[2])[2])[0], 8);
  ASSERT_EQ(types(astsd), (std::vector<std::string>{"mp4a"}));
  EXPECT_EQ(be16(astsd[0].body + 16), 2u);                  // channelcount
  EXPECT_EQ(be32(astsd[0].body + 24), 44100u << 16);         // samplerate 16.16
  const auto esds = children(astsd[0], 28);
  ASSERT_EQ(types(esds), (std::vector<std::string>{"esds"}));
  const Bytes expected_esds = {0, 0, 0, 0,                       // version, flags
                               0x03, 0x80, 0x80, 0x80, 0x22,     // ES_Descriptor, 34 bytes
                               0, 0, 0,                          // ES_ID, flags
                               0x04, 0x80, 0x80, 0x80, 0x0D + 7, // DecoderConfigDescriptor
                               0x40, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                               0x05, 0x80, 0x80, 0x80, 0x02, 0x12, 0x10,  // the ASC
                               0x06, 0x80, 0x80, 0x80, 0x01, 0x02};
  EXPECT_EQ(Bytes(esds[0].body, esds[0].body + esds[0].body_size()), expected_esds);
  // mvex: one trex per track.
  const auto mvex = children(moov[3]);
  ASSERT_EQ(types(mvex), (std::vector<std::string>{"trex", "trex"}));
  EXPECT_EQ(Bytes(mvex[1].body, mvex[1].body + mvex[1].body_size()),
            (Bytes{0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(Fmp4Muxer, FragmentCarriesTimesSizesFlagsAndOffsets) {
  Fmp4Muxer m(av_tracks());
  const Bytes v1 = {0, 0, 0, 2, 0x65, 0x88}, v2 = {0, 0, 0, 3, 0x41, 0x9a, 0x01};
  const Bytes a1 = {0x21, 0x10, 0x05}, a2 = {0x21, 0x11};
  EXPECT_TRUE(m.add({true, 1000, 80, true, v1}));
  EXPECT_TRUE(m.add({false, 1000, 0, false, a1}));
  EXPECT_TRUE(m.add({true, 1040, 40, false, v2}));
  EXPECT_TRUE(m.add({false, 1023, 0, false, a2}));
  EXPECT_TRUE(m.independent());
  Bytes out = {0xAA};  // appended after what is there
  m.flush(1080, out);
  EXPECT_TRUE(m.empty());
  const auto top = boxes(out.data() + 1, out.size() - 1, 1);
  ASSERT_EQ(types(top), (std::vector<std::string>{"moof", "mdat"}));
  EXPECT_EQ(Bytes(top[1].body, top[1].body + top[1].body_size()),
            (Bytes{0, 0, 0, 2, 0x65, 0x88, 0, 0, 0, 3, 0x41, 0x9a, 0x01, 0x21, 0x10, 0x05, 0x21, 0x11}));
  const auto moof = children(top[0]);
  ASSERT_EQ(types(moof), (std::vector<std::string>{"mfhd", "traf", "traf"}));
  EXPECT_EQ(be32(moof[0].body + 4), 1u);  // sequence_number
  const size_t mdat_data = top[1].offset + 8 - top[0].offset;  // from the start of moof

  const auto vtraf = children(moof[1]);
  ASSERT_EQ(types(vtraf), (std::vector<std::string>{"tfhd", "tfdt", "trun"}));
  EXPECT_EQ(Bytes(vtraf[0].body, vtraf[0].body + vtraf[0].body_size()), (Bytes{0, 2, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(vtraf[1].body[0], 1);                  // tfdt version 1
  EXPECT_EQ(be64(vtraf[1].body + 4), 90000u);      // 1000 ms at 90 kHz
  const uint8_t* trun = vtraf[2].body;
  EXPECT_EQ(be32(trun), 0x01000F01u);  // version 1; offset, duration, size, flags, cts
  EXPECT_EQ(be32(trun + 4), 2u);
  EXPECT_EQ(be32(trun + 8), mdat_data);
  EXPECT_EQ(be32(trun + 12), 3600u);       // 40 ms
  EXPECT_EQ(be32(trun + 16), 6u);
  EXPECT_EQ(be32(trun + 20), 0x02000000u);  // sync sample
  EXPECT_EQ(be32(trun + 24), 7200u);       // 80 ms composition offset
  EXPECT_EQ(be32(trun + 28), 3600u);       // to the end time given to flush
  EXPECT_EQ(be32(trun + 32), 7u);
  EXPECT_EQ(be32(trun + 36), 0x01010000u);  // not a sync sample
  EXPECT_EQ(be32(trun + 40), 3600u);

  const auto atraf = children(moof[2]);
  EXPECT_EQ(be32(atraf[0].body + 4), 2u);
  EXPECT_EQ(be64(atraf[1].body + 4), 44100u);
  const uint8_t* atrun = atraf[2].body;
  EXPECT_EQ(be32(atrun), 0x01000701u);  // no composition offsets for audio
  EXPECT_EQ(be32(atrun + 4), 2u);
  EXPECT_EQ(be32(atrun + 8), mdat_data + 13);  // after the video bytes
  EXPECT_EQ(be32(atrun + 12), 1014u);          // 1023 ms - 1000 ms at 44.1 kHz (floored ticks)
  EXPECT_EQ(be32(atrun + 16), 3u);
  EXPECT_EQ(be32(atrun + 20), 0x02000000u);
  EXPECT_EQ(be32(atrun + 24), 2514u);  // to 1080 ms: 47628 - 45114 ticks
  EXPECT_EQ(be32(atrun + 28), 2u);

  // The next fragment continues the sequence.
  m.add({true, 1080, 0, false, v2});
  Bytes next;
  m.flush(1120, next);
  EXPECT_FALSE(m.independent());
  EXPECT_EQ(be32(children(boxes(next.data(), next.size())[0])[0].body + 4), 2u);
}

// Borrowed samples (read from the caller's bytes at flush) make the same bytes as copied ones,
// mixed in one fragment too; pending_bytes() counts both.
TEST(Fmp4Muxer, BorrowedSamplesMakeTheSameFragment) {
  const Bytes v1 = {0, 0, 0, 2, 0x65, 0x88}, v2 = {0, 0, 0, 3, 0x41, 0x9a, 0x01};
  const Bytes a1 = {0x21, 0x10, 0x05}, a2 = {0x21, 0x11};
  const std::vector<Fmp4Sample> in = {{true, 1000, 80, true, v1},
                                      {false, 1000, 0, false, a1},
                                      {true, 1040, 40, false, v2},
                                      {false, 1023, 0, false, a2}};
  Fmp4Muxer copied(av_tracks()), borrowed(av_tracks()), mixed(av_tracks());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_TRUE(copied.add(in[i]));
    EXPECT_TRUE(borrowed.add_borrowed(in[i]));
    EXPECT_TRUE(i % 2 ? mixed.add(in[i]) : mixed.add_borrowed(in[i]));
  }
  EXPECT_EQ(borrowed.pending_bytes(), 18u);
  EXPECT_EQ(mixed.pending_bytes(), 18u);
  const Bytes v3 = {0, 0, 0, 1, 0x41};  // a borrowed sample after a copied one of its track
  copied.add({true, 1080, 0, false, v3});
  borrowed.add_borrowed({true, 1080, 0, false, v3});
  mixed.add_borrowed({true, 1080, 0, false, v3});
  Bytes a, b, c;
  copied.flush(1120, a);
  borrowed.flush(1120, b);
  mixed.flush(1120, c);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  EXPECT_EQ(borrowed.pending_bytes(), 0u);
}

// flush() with a list for the mdat's payload: borrowed samples are listed, not copied, and the
// bytes written followed by the listed pieces are the fragment flush() makes; one copied sample
// makes it copy them all (nothing listed). A second fragment continues the sequence the same way.
TEST(Fmp4Muxer, BorrowedSamplesListedInsteadOfCopied) {
  const Bytes v1 = {0, 0, 0, 2, 0x65, 0x88}, v2 = {0, 0, 0, 3, 0x41, 0x9a, 0x01};
  const Bytes a1 = {0x21, 0x10, 0x05}, a2 = {0x21, 0x11};
  const std::vector<Fmp4Sample> in = {{true, 1000, 80, true, v1},
                                      {false, 1000, 0, false, a1},
                                      {true, 1040, 40, false, v2},
                                      {false, 1023, 0, false, a2}};
  Fmp4Muxer copied(av_tracks()), listed(av_tracks()), mixed(av_tracks());
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < in.size(); ++i) {
      Fmp4Sample s = in[i];
      s.dts_ms += round * 80;
      copied.add(s);
      listed.add_borrowed(s);
      EXPECT_TRUE(i == 2 ? mixed.add(s) : mixed.add_borrowed(s));
    }
    Bytes a, b = {0xEE}, c;  // what `out` held before stays in front
    std::vector<std::span<const uint8_t>> pieces, none;
    copied.flush(1080 + round * 80, a);
    listed.flush(1080 + round * 80, b, pieces);
    mixed.flush(1080 + round * 80, c, none);
    EXPECT_TRUE(none.empty());
    EXPECT_EQ(a, c);
    // The video samples, then the audio ones, each where the caller keeps it.
    ASSERT_EQ(pieces.size(), 4u);
    EXPECT_EQ(pieces[0].data(), v1.data());
    EXPECT_EQ(pieces[1].data(), v2.data());
    EXPECT_EQ(pieces[2].data(), a1.data());
    EXPECT_EQ(pieces[3].data(), a2.data());
    EXPECT_EQ(b.size(), 1 + a.size() - 18);  // the moof and the mdat's header only
    EXPECT_EQ(b.front(), 0xEE);
    Bytes whole(b.begin() + 1, b.end());
    for (const auto& p : pieces) whole.insert(whole.end(), p.begin(), p.end());
    EXPECT_EQ(whole, a);
    EXPECT_EQ(listed.pending_bytes(), 0u);
  }
  Bytes d;
  std::vector<std::span<const uint8_t>> pieces;
  listed.flush(2000, d, pieces);  // nothing buffered: nothing written
  EXPECT_TRUE(d.empty());
  EXPECT_TRUE(pieces.empty());
}

TEST(Fmp4Muxer, AudioOnlyAndVideoOnly) {
  Fmp4Tracks a;
  a.has_audio = true;
  a.audio_asc = kAsc;
  Fmp4Muxer audio(a);
  EXPECT_FALSE(audio.add({true, 0, 0, true, kSps}));  // no video track
  EXPECT_TRUE(audio.independent());
  const auto moov = children(boxes(audio.init_segment().data(), audio.init_segment().size())[1]);
  EXPECT_EQ(types(moov), (std::vector<std::string>{"mvhd", "trak", "mvex"}));
  EXPECT_EQ(be32(children(moov[1])[0].body + 12), 1u);  // the audio track is track 1

  Fmp4Tracks v;
  v.has_video = true;
  v.video_record = kAvcRecord;
  Fmp4Muxer video(v);
  EXPECT_FALSE(video.add({false, 0, 0, false, kAsc}));
  Bytes out;
  video.flush(100, out);
  EXPECT_TRUE(out.empty());  // nothing buffered, nothing written
}

TEST(Fmp4Muxer, RejectsBadConfiguration) {
  EXPECT_THROW(Fmp4Muxer(Fmp4Tracks{}), ProtocolError);
  Fmp4Tracks t;
  t.has_video = true;
  t.video_record = {0x01, 0x42};
  EXPECT_THROW(Fmp4Muxer{t}, ProtocolError);
  Fmp4Tracks a;
  a.has_audio = true;
  a.audio_asc = {0x17};  // truncated
  EXPECT_THROW(Fmp4Muxer{a}, ProtocolError);
}
