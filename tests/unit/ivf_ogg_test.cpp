// The IVF and Ogg file readers (protocol/ivf_file, protocol/ogg_file): small files laid out as
// ffmpeg 5.1 writes them (-f ivf, -f ogg), built here byte by byte.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "codec_test_data.h"
#include "rill/protocol/error.h"
#include "rill/protocol/ivf_file.h"
#include "rill/protocol/ogg_file.h"

using namespace rill::protocol;
using namespace rill::testdata;

namespace {

void put_le(Bytes& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// An IVF file: 32-byte header (160x90, time base 1/10), then the frames.
Bytes ivf(const std::vector<std::pair<uint64_t, Bytes>>& frames) {
  Bytes b = {'D', 'K', 'I', 'F'};
  put_le(b, 0, 2);
  put_le(b, 32, 2);
  b.insert(b.end(), {'A', 'V', '0', '1'});
  put_le(b, 160, 2);
  put_le(b, 90, 2);
  put_le(b, 10, 4);  // rate (time base denominator)
  put_le(b, 1, 4);   // scale (numerator)
  put_le(b, frames.size(), 4);
  put_le(b, 0, 4);
  for (const auto& [pts, data] : frames) {
    put_le(b, data.size(), 4);
    put_le(b, pts, 8);
    b.insert(b.end(), data.begin(), data.end());
  }
  return b;
}

// One Ogg page of stream `serial` holding `segments` (each < 256 bytes, its own lacing value).
Bytes ogg_page(uint32_t serial, const std::vector<Bytes>& segments) {
  Bytes b = {'O', 'g', 'g', 'S', 0, 0};
  put_le(b, 0, 8);  // granule position
  put_le(b, serial, 4);
  put_le(b, 0, 4);  // page sequence number
  put_le(b, 0, 4);  // CRC (not checked)
  b.push_back(static_cast<uint8_t>(segments.size()));
  for (const Bytes& s : segments) b.push_back(static_cast<uint8_t>(s.size()));
  for (const Bytes& s : segments) b.insert(b.end(), s.begin(), s.end());
  return b;
}

}  // namespace

TEST(IvfFile, HeaderAndFrames) {
  const Bytes file = ivf({{0, hex("1200 0a0b")}, {3, hex("1200")}});
  const IvfFile f = parse_ivf(file);
  EXPECT_EQ(f.fourcc, 0x41563031u);  // "AV01"
  EXPECT_EQ(f.width, 160);
  EXPECT_EQ(f.height, 90);
  EXPECT_EQ(f.timebase_num, 1u);
  EXPECT_EQ(f.timebase_den, 10u);
  ASSERT_EQ(f.frames.size(), 2u);
  EXPECT_EQ(f.frames[1].pts, 3u);
  EXPECT_EQ(Bytes(f.frames[0].data.begin(), f.frames[0].data.end()), hex("1200 0a0b"));
  EXPECT_TRUE(parse_ivf(ivf({})).frames.empty());
}

TEST(IvfFile, MalformedFilesThrow) {
  Bytes file = ivf({{0, hex("1200 0a0b")}});
  EXPECT_THROW(parse_ivf(Bytes(file.begin(), file.end() - 1)), ProtocolError);     // frame past the end
  EXPECT_THROW(parse_ivf(Bytes(file.begin(), file.begin() + 40)), ProtocolError);  // frame header cut
  EXPECT_THROW(parse_ivf(Bytes(file.begin(), file.begin() + 20)), ProtocolError);  // file header cut
  Bytes bad = file;
  bad[0] = 'X';
  EXPECT_THROW(parse_ivf(bad), ProtocolError);
  bad = file;
  bad[16] = 0;  // time base denominator 0
  EXPECT_THROW(parse_ivf(bad), ProtocolError);
}

TEST(OggFile, PacketsOfTheFirstStream) {
  const Bytes long_start(255, 0x11);
  Bytes file = ogg_page(7, {hex("aa"), hex("bbcc")});
  // A packet of 255 + 2 bytes continued on the next page, and a page of another stream between.
  Bytes page = ogg_page(7, {long_start});
  file.insert(file.end(), page.begin(), page.end());
  page = ogg_page(9, {hex("ee")});
  file.insert(file.end(), page.begin(), page.end());
  page = ogg_page(7, {hex("2222"), hex("33")});
  file.insert(file.end(), page.begin(), page.end());
  const auto packets = ogg_packets(file);
  ASSERT_EQ(packets.size(), 4u);
  EXPECT_EQ(packets[0], hex("aa"));
  EXPECT_EQ(packets[1], hex("bbcc"));
  EXPECT_EQ(packets[2].size(), 257u);
  EXPECT_EQ(packets[2].back(), 0x22);
  EXPECT_EQ(packets[3], hex("33"));
}

TEST(OggFile, MalformedFilesThrow) {
  const Bytes file = ogg_page(7, {hex("aabb")});
  EXPECT_THROW(ogg_packets(Bytes(file.begin(), file.end() - 1)), ProtocolError);     // body cut
  EXPECT_THROW(ogg_packets(Bytes(file.begin(), file.begin() + 20)), ProtocolError);  // header cut
  Bytes bad = file;
  bad[4] = 1;  // version
  EXPECT_THROW(ogg_packets(bad), ProtocolError);
  bad = file;
  bad[0] = 'X';
  EXPECT_THROW(ogg_packets(bad), ProtocolError);
  EXPECT_TRUE(ogg_packets(Bytes{}).empty());
}
