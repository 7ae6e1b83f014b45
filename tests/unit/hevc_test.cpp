// H.265/HEVC: the HEVCDecoderConfigurationRecord and the Annex B access unit MPEG-TS carries.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "rill/protocol/error.h"
#include "rill/protocol/hevc.h"


namespace {
std::vector<uint8_t> hevc_record(uint8_t length_size_minus_one = 3) {
  std::vector<uint8_t> r = {0x01, 0x21, 0x60, 0x00, 0x00, 0x00, 0x90, 0x00, 0x00, 0x00, 0x00, 0x00,
                            0x5D, 0xF0, 0x00, 0xFC, 0xFD, 0xF8, 0xF8, 0x00, 0x00,
                            static_cast<uint8_t>(0x0C | length_size_minus_one), 0x04};
  for (uint8_t type : {32, 33, 34, 39}) {  // VPS, SPS, PPS, and an SEI array (skipped)
    // Byte by byte: GCC 12 misreads a range insert here as out of bounds (-Warray-bounds).
    for (uint8_t b : {static_cast<uint8_t>(0x80 | type), uint8_t{0x00}, uint8_t{0x01}, uint8_t{0x00}, uint8_t{0x02},
                      static_cast<uint8_t>(type << 1), uint8_t{0x01}})
      r.push_back(b);
  }
  return r;
}
}  // namespace

TEST(Hevc, ParsesConfigRecord) {
  const rill::protocol::HevcConfig c = rill::protocol::parse_hevc_config(hevc_record());
  EXPECT_EQ(c.general_profile_idc, 1);
  EXPECT_TRUE(c.general_tier_flag);
  EXPECT_EQ(c.general_profile_compatibility_flags, 0x60000000u);
  EXPECT_EQ(c.general_level_idc, 0x5D);
  EXPECT_EQ(c.nalu_length_size, 4);
  ASSERT_EQ(c.vps.size(), 1u);
  EXPECT_EQ(c.vps[0], (std::vector<uint8_t>{0x40, 0x01}));
  EXPECT_EQ(c.sps[0], (std::vector<uint8_t>{0x42, 0x01}));
  EXPECT_EQ(c.pps[0], (std::vector<uint8_t>{0x44, 0x01}));
}

TEST(Hevc, RejectsMalformedRecords) {
  using rill::protocol::ProtocolError;
  auto r = hevc_record();
  EXPECT_THROW(rill::protocol::parse_hevc_config(std::span(r).first(22)), ProtocolError);  // short header
  EXPECT_THROW(rill::protocol::parse_hevc_config(std::span(r).first(r.size() - 1)), ProtocolError);  // truncated NAL
  auto bad_version = r;
  bad_version[0] = 2;
  EXPECT_THROW(rill::protocol::parse_hevc_config(bad_version), ProtocolError);
  EXPECT_THROW(rill::protocol::parse_hevc_config(hevc_record(2)), ProtocolError);  // reserved length size
  auto no_pps = r;
  no_pps[22] = 2;  // only the VPS and SPS arrays
  EXPECT_THROW(rill::protocol::parse_hevc_config(std::span(no_pps).first(23 + 14)), ProtocolError);
}

TEST(Hevc, AnnexBAccessUnitHasAudAndParameterSetsBeforeIrap) {
  const auto c = rill::protocol::parse_hevc_config(hevc_record());
  const std::vector<uint8_t> idr = {0, 0, 0, 2, 0x26, 0x01};  // IDR_W_RADL
  std::vector<uint8_t> out;
  rill::protocol::hevc_to_annexb_access_unit(idr, c, false, out);  // IRAP found in the sample
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 0, 0, 1, 0x46, 0x01, 0x50, 0, 0, 0, 1, 0x40, 0x01, 0, 0, 0, 1, 0x42, 0x01,
                                       0, 0, 0, 1, 0x44, 0x01, 0, 0, 0, 1, 0x26, 0x01}));
  out.clear();
  const std::vector<uint8_t> trail = {0, 0, 0, 2, 0x02, 0x01};  // TRAIL_R
  rill::protocol::hevc_to_annexb_access_unit(trail, c, false, out);
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 0, 0, 1, 0x46, 0x01, 0x50, 0, 0, 0, 1, 0x02, 0x01}));
  const std::vector<uint8_t> broken = {0, 0, 0, 9, 0x02};
  out.clear();
  EXPECT_THROW(rill::protocol::hevc_to_annexb_access_unit(broken, c, true, out), rill::protocol::ProtocolError);
  EXPECT_TRUE(out.empty());
}
