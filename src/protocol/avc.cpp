#include "rill/protocol/avc.h"

#include <string>

#include "rill/protocol/error.h"

namespace rill::protocol {

namespace detail {

void throw_avcc_error(size_t offset, size_t need, size_t have) {
  throw ProtocolError("AVCC sample: NAL unit at offset " + std::to_string(offset) + " needs " +
                      std::to_string(need) + " bytes, " + std::to_string(have) + " left");
}

void check_avcc_length_size(uint8_t length_size) {
  // ISO/IEC 14496-15 5.3.3.1.2: lengthSizeMinusOne is 0, 1 or 3.
  if (length_size != 1 && length_size != 2 && length_size != 4)
    throw ProtocolError("AVCC: NAL unit length size must be 1, 2 or 4, got " + std::to_string(length_size));
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// AVCDecoderConfigurationRecord (ISO/IEC 14496-15 5.3.3.1):
//   configurationVersion(8)=1 AVCProfileIndication(8) profile_compatibility(8)
//   AVCLevelIndication(8) reserved(6)='111111' lengthSizeMinusOne(2)
//   reserved(3)='111' numOfSequenceParameterSets(5) {sequenceParameterSetLength(16) NAL}*
//   numOfPictureParameterSets(8) {pictureParameterSetLength(16) NAL}*  [High-profile extension]
namespace {

class Reader {
 public:
  Reader(std::span<const uint8_t> b, const char* what) : b_(b), what_(what) {}
  void need(size_t n, const char* field) const {
    if (b_.size() - off_ < n)
      throw ProtocolError(std::string(what_) + ": truncated at " + field + " (offset " +
                          std::to_string(off_) + ", need " + std::to_string(n) + " bytes, have " +
                          std::to_string(b_.size() - off_) + ")");
  }
  uint8_t u8(const char* field) {
    need(1, field);
    return b_[off_++];
  }
  uint16_t u16(const char* field) {
    need(2, field);
    uint16_t v = static_cast<uint16_t>((b_[off_] << 8) | b_[off_ + 1]);
    off_ += 2;
    return v;
  }
  std::span<const uint8_t> bytes(size_t n, const char* field) {
    need(n, field);
    auto s = b_.subspan(off_, n);
    off_ += n;
    return s;
  }

 private:
  std::span<const uint8_t> b_;
  size_t off_ = 0;
  const char* what_;
};

void read_param_sets(Reader& r, size_t count, uint8_t nal_type, const char* name,
                     std::vector<std::vector<uint8_t>>& out) {
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    uint16_t len = r.u16(name);
    if (len == 0) throw ProtocolError(std::string("AVC config: empty ") + name);
    auto nal = r.bytes(len, name);
    if ((nal[0] & 0x1F) != nal_type)
      throw ProtocolError(std::string("AVC config: ") + name + " has nal_unit_type " +
                          std::to_string(nal[0] & 0x1F) + ", expected " + std::to_string(nal_type));
    out.emplace_back(nal.begin(), nal.end());
  }
}

}  // namespace

AvcConfig parse_avc_config(std::span<const uint8_t> record) {
  Reader r(record, "AVC config");
  AvcConfig c;
  uint8_t version = r.u8("configurationVersion");
  if (version != 1)
    throw ProtocolError("AVC config: configurationVersion must be 1, got " + std::to_string(version));
  c.profile = r.u8("AVCProfileIndication");
  c.profile_compatibility = r.u8("profile_compatibility");
  c.level = r.u8("AVCLevelIndication");
  c.nalu_length_size = static_cast<uint8_t>((r.u8("lengthSizeMinusOne") & 0x03) + 1);
  if (c.nalu_length_size == 3)
    throw ProtocolError("AVC config: lengthSizeMinusOne 2 is reserved (expected 0, 1 or 3)");
  size_t num_sps = r.u8("numOfSequenceParameterSets") & 0x1F;
  read_param_sets(r, num_sps, avc_nal::kSps, "SPS", c.sps);
  size_t num_pps = r.u8("numOfPictureParameterSets");
  read_param_sets(r, num_pps, avc_nal::kPps, "PPS", c.pps);
  return c;
}

// ---------------------------------------------------------------------------------------------
// SPS (H.264 7.3.2.1.1), read from the RBSP (emulation_prevention_three_byte removed, 7.4.1).
namespace {

class BitReader {
 public:
  explicit BitReader(const std::vector<uint8_t>& rbsp) : b_(rbsp) {}
  uint32_t bit() {
    if (pos_ >= b_.size() * 8) throw ProtocolError("AVC SPS: truncated");
    uint32_t v = (b_[pos_ >> 3] >> (7 - (pos_ & 7))) & 1u;
    ++pos_;
    return v;
  }
  uint32_t bits(int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 1) | bit();
    return v;
  }
  // ue(v), 9.1: leadingZeroBits zeros, a one, then leadingZeroBits bits.
  uint32_t ue() {
    int zeros = 0;
    while (bit() == 0) {
      if (++zeros > 31) throw ProtocolError("AVC SPS: Exp-Golomb code longer than 32 bits");
    }
    return static_cast<uint32_t>(((uint64_t{1} << zeros) - 1) + bits(zeros));
  }
  int32_t se() {  // 9.1.1
    uint32_t k = ue();
    return (k & 1) ? static_cast<int32_t>((k + 1ull) / 2) : -static_cast<int32_t>(k / 2);
  }

 private:
  const std::vector<uint8_t>& b_;
  size_t pos_ = 0;
};

uint32_t ue_max(BitReader& br, uint32_t max, const char* field) {
  uint32_t v = br.ue();
  if (v > max)
    throw ProtocolError(std::string("AVC SPS: ") + field + " " + std::to_string(v) + " exceeds " +
                        std::to_string(max));
  return v;
}

void skip_scaling_list(BitReader& br, int size) {  // 7.3.2.1.1.1
  int last = 8, next = 8;
  for (int j = 0; j < size; ++j) {
    if (next != 0) {
      int32_t delta = br.se();
      if (delta < -128 || delta > 127) throw ProtocolError("AVC SPS: delta_scale out of range");
      next = (last + delta + 256) % 256;
    }
    last = next == 0 ? last : next;
  }
}

// H.264 7.3.2.1.1: these profile_idc values carry chroma_format_idc, bit depths and scaling
// matrices in the SPS.
bool has_chroma_format_fields(uint8_t profile_idc) {
  static constexpr uint8_t kProfiles[] = {100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135};
  for (uint8_t p : kProfiles)
    if (p == profile_idc) return true;
  return false;
}

}  // namespace

AvcSpsInfo parse_avc_sps(std::span<const uint8_t> nal) {
  if (nal.empty() || (nal[0] & 0x1F) != avc_nal::kSps)
    throw ProtocolError("AVC SPS: expected nal_unit_type 7");
  std::vector<uint8_t> rbsp;
  rbsp.reserve(nal.size());
  for (size_t i = 1, zeros = 0; i < nal.size(); ++i) {
    if (zeros >= 2 && nal[i] == 0x03) {
      zeros = 0;
      continue;
    }  // emulation_prevention_three_byte
    zeros = nal[i] == 0 ? zeros + 1 : 0;
    rbsp.push_back(nal[i]);
  }
  BitReader br(rbsp);
  AvcSpsInfo info;
  info.profile_idc = static_cast<uint8_t>(br.bits(8));
  br.bits(8);  // constraint_set flags, reserved_zero_2bits
  info.level_idc = static_cast<uint8_t>(br.bits(8));
  ue_max(br, 31, "seq_parameter_set_id");
  uint32_t chroma_format_idc = 1;
  bool separate_colour_plane = false;
  if (has_chroma_format_fields(info.profile_idc)) {
    chroma_format_idc = ue_max(br, 3, "chroma_format_idc");
    if (chroma_format_idc == 3) separate_colour_plane = br.bit();
    ue_max(br, 6, "bit_depth_luma_minus8");
    ue_max(br, 6, "bit_depth_chroma_minus8");
    br.bit();        // qpprime_y_zero_transform_bypass_flag
    if (br.bit()) {  // seq_scaling_matrix_present_flag
      int lists = chroma_format_idc != 3 ? 8 : 12;
      for (int i = 0; i < lists; ++i)
        if (br.bit()) skip_scaling_list(br, i < 6 ? 16 : 64);
    }
  }
  ue_max(br, 12, "log2_max_frame_num_minus4");
  uint32_t poc_type = ue_max(br, 2, "pic_order_cnt_type");
  if (poc_type == 0) {
    ue_max(br, 12, "log2_max_pic_order_cnt_lsb_minus4");
  } else if (poc_type == 1) {
    br.bit();  // delta_pic_order_always_zero_flag
    br.se();   // offset_for_non_ref_pic
    br.se();   // offset_for_top_to_bottom_field
    uint32_t n = ue_max(br, 255, "num_ref_frames_in_pic_order_cnt_cycle");
    for (uint32_t i = 0; i < n; ++i) br.se();
  }
  br.ue();   // max_num_ref_frames
  br.bit();  // gaps_in_frame_num_value_allowed_flag
  uint64_t width_mbs = uint64_t{ue_max(br, 4095, "pic_width_in_mbs_minus1")} + 1;
  uint64_t height_units = uint64_t{ue_max(br, 4095, "pic_height_in_map_units_minus1")} + 1;
  uint32_t frame_mbs_only = br.bit();
  if (!frame_mbs_only) br.bit();  // mb_adaptive_frame_field_flag
  br.bit();                       // direct_8x8_inference_flag
  uint64_t width = width_mbs * 16;
  uint64_t height = (2 - frame_mbs_only) * height_units * 16;  // (7-18)
  if (br.bit()) {  // frame_cropping_flag; CropUnitX/Y per (7-19)..(7-22)
    uint64_t l = br.ue(), r = br.ue(), t = br.ue(), b = br.ue();
    uint32_t chroma_array_type = separate_colour_plane ? 0 : chroma_format_idc;
    uint64_t unit_x = 1, unit_y = 2 - frame_mbs_only;
    if (chroma_array_type != 0) {
      unit_x = chroma_format_idc == 3 ? 1 : 2;
      unit_y = (chroma_format_idc == 1 ? 2 : 1) * (2 - frame_mbs_only);
    }
    uint64_t cx = unit_x * (l + r), cy = unit_y * (t + b);
    if (cx >= width || cy >= height) throw ProtocolError("AVC SPS: frame cropping exceeds picture size");
    width -= cx;
    height -= cy;
  }
  info.width = static_cast<uint32_t>(width);
  info.height = static_cast<uint32_t>(height);
  return info;
}

// ---------------------------------------------------------------------------------------------
// Annex B (H.264 B.1): each NAL unit preceded by a start code; the 4-byte form (zero_byte +
// start_code_prefix_one_3bytes) is used throughout, as B.1.2 requires for SPS/PPS and the first
// NAL unit of an access unit.
namespace {

constexpr uint8_t kStartCode[4] = {0, 0, 0, 1};
// AUD with primary_pic_type 7 (any slice type) and rbsp_stop_one_bit (7.3.2.4).
constexpr uint8_t kAud[2] = {0x09, 0xF0};

inline void append_nal(std::vector<uint8_t>& out, const uint8_t* p, size_t n) {
  out.insert(out.end(), kStartCode, kStartCode + 4);
  out.insert(out.end(), p, p + n);
}

// The NAL unit types of a sample that decide what its Annex B form adds.
struct AccessUnitNals {
  bool aud = false, sps = false, pps = false, idr = false;

  void note(uint8_t nal_header) {
    switch (nal_header & 0x1F) {
      case avc_nal::kAud:
        aud = true;
        break;
      case avc_nal::kSps:
        sps = true;
        break;
      case avc_nal::kPps:
        pps = true;
        break;
      case avc_nal::kIdr:
        idr = true;
        break;
      default:
        break;
    }
  }
};

// The config's parameter sets the sample does not carry itself.
void append_param_sets(const AvcConfig& config, const AccessUnitNals& has, std::vector<uint8_t>& out) {
  if (!has.sps)
    for (const auto& s : config.sps) append_nal(out, s.data(), s.size());
  if (!has.pps)
    for (const auto& p : config.pps) append_nal(out, p.data(), p.size());
}

}  // namespace

void avcc_to_annexb(std::span<const uint8_t> sample, uint8_t length_size, std::vector<uint8_t>& out) {
  for_each_avcc_nalu(sample, length_size,
                     [&](std::span<const uint8_t> nal) { append_nal(out, nal.data(), nal.size()); });
}

void avcc_to_annexb_access_unit(std::span<const uint8_t> sample, const AvcConfig& config, bool keyframe,
                                std::vector<uint8_t>& out) {
  AccessUnitNals has;
  for_each_avcc_nalu(sample, config.nalu_length_size,
                     [&](std::span<const uint8_t> nal) { has.note(nal[0]); });
  // validated: nothing below throws on the sample
  const bool insert_params = keyframe || has.idr;
  auto insert_param_sets = [&] {
    if (insert_params) append_param_sets(config, has, out);
  };
  if (!has.aud) {
    append_nal(out, kAud, sizeof kAud);
    insert_param_sets();
  }
  bool params_done = !has.aud;
  for_each_avcc_nalu(sample, config.nalu_length_size, [&](std::span<const uint8_t> nal) {
    // The sample's own AUD stays first; parameter sets follow it, before SEI and slices.
    if (!params_done && (nal[0] & 0x1F) != avc_nal::kAud) {
      insert_param_sets();
      params_done = true;
    }
    append_nal(out, nal.data(), nal.size());
  });
  if (!params_done) insert_param_sets();
}

bool avcc_annexb_prefix(std::span<const uint8_t> sample, const AvcConfig& config, bool keyframe,
                        std::vector<uint8_t>& out) {
  if (config.nalu_length_size != 4) return false;
  AccessUnitNals has;
  bool has_empty = false;  // a zero-length NAL unit, which the copying form leaves out
  const uint8_t* p = sample.data();
  const size_t n = sample.size();
  for (size_t off = 0; off < n;) {
    if (n - off < 4) detail::throw_avcc_error(off, 4, n - off);
    const size_t len =
        (size_t{p[off]} << 24) | (size_t{p[off + 1]} << 16) | (size_t{p[off + 2]} << 8) | p[off + 3];
    off += 4;
    if (len > n - off) detail::throw_avcc_error(off, len, n - off);
    if (len == 0)
      has_empty = true;
    else
      has.note(p[off]);
    off += len;
  }
  const bool insert_params = keyframe || has.idr;
  const bool inserts =
      insert_params && ((!has.sps && !config.sps.empty()) || (!has.pps && !config.pps.empty()));
  if (has_empty || (has.aud && inserts)) return false;
  if (has.aud) return true;  // the sample as it is
  append_nal(out, kAud, sizeof kAud);
  if (insert_params) append_param_sets(config, has, out);
  return true;
}

}  // namespace rill::protocol
