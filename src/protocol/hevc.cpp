#include "rill/protocol/hevc.h"

#include <string>

#include "rill/core/byte_order.h"
#include "rill/protocol/avc.h"
#include "rill/protocol/error.h"

namespace rill::protocol {

namespace {

constexpr size_t kFixedHeader = 23;  // the record's fields before numOfArrays (§8.3.3.1.2)

void need(std::span<const uint8_t> r, size_t off, size_t n, const char* what) {
  if (off > r.size() || r.size() - off < n) {
    throw ProtocolError(std::string("HEVC config record: truncated ") + what + " at byte " + std::to_string(off) +
                        " (" + std::to_string(r.size()) + " bytes)");
  }
}

void append_nal(const std::vector<uint8_t>& nal, std::vector<uint8_t>& out) {
  out.insert(out.end(), {0, 0, 0, 1});
  out.insert(out.end(), nal.begin(), nal.end());
}

}  // namespace

HevcConfig parse_hevc_config(std::span<const uint8_t> r) {
  need(r, 0, kFixedHeader, "header");
  if (r[0] != 1) throw ProtocolError("HEVC config record: configurationVersion " + std::to_string(r[0]) + ", expected 1");
  HevcConfig c;
  c.general_profile_space = static_cast<uint8_t>(r[1] >> 6);
  c.general_tier_flag = (r[1] & 0x20) != 0;
  c.general_profile_idc = r[1] & 0x1F;
  c.general_profile_compatibility_flags = load_be32(&r[2]);
  c.general_level_idc = r[12];
  const uint8_t length_size_minus_one = r[21] & 0x03;
  if (length_size_minus_one == 2) throw ProtocolError("HEVC config record: reserved lengthSizeMinusOne 2");
  c.nalu_length_size = static_cast<uint8_t>(length_size_minus_one + 1);
  const uint8_t arrays = r[22];
  size_t off = kFixedHeader;
  for (uint8_t a = 0; a < arrays; ++a) {
    need(r, off, 3, "array header");
    const uint8_t type = r[off] & 0x3F;
    const uint16_t count = load_be16(&r[off + 1]);
    off += 3;
    for (uint16_t i = 0; i < count; ++i) {
      need(r, off, 2, "NAL unit length");
      const uint16_t len = load_be16(&r[off]);
      off += 2;
      if (len == 0) throw ProtocolError("HEVC config record: empty NAL unit in array of type " + std::to_string(type));
      need(r, off, len, "NAL unit");
      std::vector<uint8_t> nal(r.begin() + static_cast<ptrdiff_t>(off), r.begin() + static_cast<ptrdiff_t>(off + len));
      off += len;
      if (type == hevc_nal::kVps) c.vps.push_back(std::move(nal));
      else if (type == hevc_nal::kSps) c.sps.push_back(std::move(nal));
      else if (type == hevc_nal::kPps) c.pps.push_back(std::move(nal));
    }
  }
  if (c.vps.empty() || c.sps.empty() || c.pps.empty()) {
    throw ProtocolError("HEVC config record: " + std::to_string(c.vps.size()) + " VPS, " + std::to_string(c.sps.size()) +
                        " SPS, " + std::to_string(c.pps.size()) + " PPS; expected at least one of each");
  }
  return c;
}

void hevc_to_annexb_access_unit(std::span<const uint8_t> sample, const HevcConfig& config, bool keyframe,
                                std::vector<uint8_t>& out) {
  bool has_aud = false, has_ps = false, irap = false;
  bool first = true;
  for_each_avcc_nalu(sample, config.nalu_length_size, [&](std::span<const uint8_t> nal) {  // validates first
    const uint8_t t = hevc_nal_type(nal[0]);
    if (first && t == hevc_nal::kAud) has_aud = true;
    first = false;
    if (t == hevc_nal::kVps || t == hevc_nal::kSps) has_ps = true;
    if (t >= hevc_nal::kBlaWLp && t <= hevc_nal::kRsvIrap23) irap = true;
  });
  // AUD: nal_unit_type 35, layer 0, temporal id 1; pic_type 2 (I, P and B slices) + stop bit.
  if (!has_aud) out.insert(out.end(), {0, 0, 0, 1, 0x46, 0x01, 0x50});
  if ((keyframe || irap) && !has_ps) {
    for (const auto& n : config.vps) append_nal(n, out);
    for (const auto& n : config.sps) append_nal(n, out);
    for (const auto& n : config.pps) append_nal(n, out);
  }
  for_each_avcc_nalu(sample, config.nalu_length_size, [&](std::span<const uint8_t> nal) {
    out.insert(out.end(), {0, 0, 0, 1});
    out.insert(out.end(), nal.begin(), nal.end());
  });
}

}  // namespace rill::protocol
