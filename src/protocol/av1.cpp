#include "rill/protocol/av1.h"

#include <string>

#include "rill/protocol/bit_reader.h"
#include "rill/protocol/error.h"

namespace rill::protocol {

namespace {

constexpr uint8_t kObuSequenceHeader = 1;  // AV1 §6.2.2, obu_type
constexpr uint8_t kObuTemporalDelimiter = 2;

// leb128() (AV1 §4.10.5): at most 8 bytes, 7 bits each, little-endian groups.
uint64_t read_leb128(std::span<const uint8_t> b, size_t& pos) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    if (pos >= b.size()) throw ProtocolError("AV1 OBU: truncated obu_size");
    const uint8_t byte = b[pos++];
    v |= uint64_t{byte & 0x7Fu} << (7 * i);
    if ((byte & 0x80) == 0) return v;
  }
  throw ProtocolError("AV1 OBU: obu_size longer than 8 bytes");
}

// The first sequence header OBU: the whole OBU (header, size, payload) and its payload.
struct FoundObu {
  std::span<const uint8_t> obu, payload;
};

FoundObu find_sequence_header_obu(std::span<const uint8_t> obus) {
  size_t pos = 0;
  while (pos < obus.size()) {
    const size_t start = pos;
    const uint8_t h = obus[pos++];
    const uint8_t type = (h >> 3) & 0x0F;
    if (h & 0x04) ++pos;  // obu_extension_header
    if ((h & 0x02) == 0) {
      // No obu_size: the OBU runs to the end (binding §2.3.3 requires size fields, be lenient).
      if (type == kObuSequenceHeader && pos <= obus.size()) return {obus.subspan(start), obus.subspan(pos)};
      break;
    }
    const uint64_t size = read_leb128(obus, pos);
    if (size > obus.size() - pos)
      throw ProtocolError("AV1 OBU: obu_size " + std::to_string(size) + " past the data");
    if (type == kObuSequenceHeader) return {obus.subspan(start, pos - start + size), obus.subspan(pos, size)};
    pos += size;
  }
  throw ProtocolError("AV1: no sequence header OBU");
}

std::span<const uint8_t> find_sequence_header(std::span<const uint8_t> obus) {
  return find_sequence_header_obu(obus).payload;
}

// The start of sequence_header_obu() (AV1 §5.5.1), up to max_frame_height_minus_1.
struct SequenceHeaderStart {
  uint8_t seq_profile = 0;
  bool reduced_still_picture_header = false;
  uint8_t seq_level_idx_0 = 0;
  bool seq_tier_0 = false;
  Av1FrameSize size;
};

SequenceHeaderStart read_sequence_header_start(BitReader& br) {
  SequenceHeaderStart h;
  h.seq_profile = static_cast<uint8_t>(br.bits(3, "seq_profile"));
  br.bits(1, "still_picture");
  h.reduced_still_picture_header = br.flag("reduced_still_picture_header");
  if (h.reduced_still_picture_header) {
    h.seq_level_idx_0 = static_cast<uint8_t>(br.bits(5, "seq_level_idx[0]"));
  } else {
    bool decoder_model_info_present = false;
    int buffer_delay_length = 0;
    if (br.flag("timing_info_present_flag")) {
      br.bits(32, "num_units_in_display_tick");
      br.bits(32, "time_scale");
      if (br.flag("equal_picture_interval")) {  // num_ticks_per_picture_minus_1: uvlc() (§4.10.3)
        int zeros = 0;
        while (!br.flag("uvlc")) {
          if (++zeros >= 32) break;
        }
        if (zeros < 32) br.bits(zeros, "uvlc value");
      }
      decoder_model_info_present = br.flag("decoder_model_info_present_flag");
      if (decoder_model_info_present) {
        buffer_delay_length = static_cast<int>(br.bits(5, "buffer_delay_length_minus_1")) + 1;
        br.bits(32, "num_units_in_decoding_tick");
        br.bits(5, "buffer_removal_time_length_minus_1");
        br.bits(5, "frame_presentation_time_length_minus_1");
      }
    }
    const bool initial_display_delay_present = br.flag("initial_display_delay_present_flag");
    const uint32_t operating_points = br.bits(5, "operating_points_cnt_minus_1") + 1;
    for (uint32_t i = 0; i < operating_points; ++i) {
      br.bits(12, "operating_point_idc");
      const uint8_t level = static_cast<uint8_t>(br.bits(5, "seq_level_idx"));
      const bool tier = level > 7 && br.flag("seq_tier");
      if (i == 0) {
        h.seq_level_idx_0 = level;
        h.seq_tier_0 = tier;
      }
      if (decoder_model_info_present && br.flag("decoder_model_present_for_this_op")) {
        br.bits(buffer_delay_length, "decoder_buffer_delay");
        br.bits(buffer_delay_length, "encoder_buffer_delay");
        br.bits(1, "low_delay_mode_flag");
      }
      if (initial_display_delay_present && br.flag("initial_display_delay_present_for_this_op"))
        br.bits(4, "initial_display_delay_minus_1");
    }
  }
  const int width_bits = static_cast<int>(br.bits(4, "frame_width_bits_minus_1")) + 1;
  const int height_bits = static_cast<int>(br.bits(4, "frame_height_bits_minus_1")) + 1;
  h.size.width = br.bits(width_bits, "max_frame_width_minus_1") + 1;
  h.size.height = br.bits(height_bits, "max_frame_height_minus_1") + 1;
  return h;
}

// sequence_header_obu() (AV1 §5.5.1) from frame_id_numbers_present_flag to enable_restoration.
void skip_sequence_tools(BitReader& br, bool reduced_still_picture_header) {
  if (!reduced_still_picture_header && br.flag("frame_id_numbers_present_flag")) {
    br.bits(4, "delta_frame_id_length_minus_2");
    br.bits(3, "additional_frame_id_length_minus_1");
  }
  br.bits(3, "use_128x128_superblock, enable_filter_intra, enable_intra_edge_filter");
  if (!reduced_still_picture_header) {
    br.bits(4,
            "enable_interintra_compound, enable_masked_compound, enable_warped_motion, enable_dual_filter");
    const bool enable_order_hint = br.flag("enable_order_hint");
    if (enable_order_hint) br.bits(2, "enable_jnt_comp, enable_ref_frame_mvs");
    // seq_force_screen_content_tools is SELECT_SCREEN_CONTENT_TOOLS (2) when chosen per frame.
    const bool choose_screen_content_tools = br.flag("seq_choose_screen_content_tools");
    const bool force_screen_content_tools =
        choose_screen_content_tools || br.flag("seq_force_screen_content_tools");
    if (force_screen_content_tools && !br.flag("seq_choose_integer_mv")) br.bits(1, "seq_force_integer_mv");
    if (enable_order_hint) br.bits(3, "order_hint_bits_minus_1");
  }
  br.bits(3, "enable_superres, enable_cdef, enable_restoration");
}

// color_config() (AV1 §5.5.2) into the record's fields.
void read_color_config(BitReader& br, Av1Config& c) {
  constexpr uint32_t kCpBt709 = 1, kTcSrgb = 13, kMcIdentity = 0;  // §6.4.2
  c.high_bitdepth = br.flag("high_bitdepth");
  if (c.seq_profile == 2 && c.high_bitdepth) c.twelve_bit = br.flag("twelve_bit");
  c.monochrome = c.seq_profile != 1 && br.flag("mono_chrome");
  uint32_t primaries = 2, transfer = 2, matrix = 2;  // CP/TC/MC_UNSPECIFIED
  if (br.flag("color_description_present_flag")) {
    primaries = br.bits(8, "color_primaries");
    transfer = br.bits(8, "transfer_characteristics");
    matrix = br.bits(8, "matrix_coefficients");
  }
  if (c.monochrome) {
    br.bits(1, "color_range");
    c.chroma_subsampling_x = c.chroma_subsampling_y = true;
    return;  // chroma_sample_position CSP_UNKNOWN (0)
  }
  if (primaries == kCpBt709 && transfer == kTcSrgb && matrix == kMcIdentity) return;  // 4:4:4
  br.bits(1, "color_range");
  if (c.seq_profile == 0) {
    c.chroma_subsampling_x = c.chroma_subsampling_y = true;
  } else if (c.seq_profile == 2) {
    if (c.twelve_bit) {
      c.chroma_subsampling_x = br.flag("subsampling_x");
      c.chroma_subsampling_y = c.chroma_subsampling_x && br.flag("subsampling_y");
    } else {
      c.chroma_subsampling_x = true;  // 4:2:2
    }
  }
  if (c.chroma_subsampling_x && c.chroma_subsampling_y)
    c.chroma_sample_position = static_cast<uint8_t>(br.bits(2, "chroma_sample_position"));
}

}  // namespace

Av1Config parse_av1_config(std::span<const uint8_t> record) {
  // AV1CodecConfigurationRecord (binding §2.3.3):
  //   marker f(1) = 1, version f(7) = 1,
  //   seq_profile f(3), seq_level_idx_0 f(5),
  //   seq_tier_0 f(1), high_bitdepth f(1), twelve_bit f(1), monochrome f(1),
  //   chroma_subsampling_x f(1), chroma_subsampling_y f(1), chroma_sample_position f(2),
  //   reserved f(3), initial_presentation_delay_present f(1), initial_presentation_delay_minus_one
  //   or reserved f(4), configOBUs.
  if (record.size() < kAv1ConfigFixedSize) {
    throw ProtocolError("av1C: " + std::to_string(record.size()) + " bytes, expected at least 4");
  }
  if ((record[0] & 0x80) == 0 || (record[0] & 0x7F) != 1) {
    throw ProtocolError("av1C: first byte " + std::to_string(record[0]) +
                        ", expected 129 (marker 1, version 1)");
  }
  Av1Config c;
  c.seq_profile = record[1] >> 5;
  c.seq_level_idx_0 = record[1] & 0x1F;
  c.seq_tier_0 = record[2] & 0x80;
  c.high_bitdepth = record[2] & 0x40;
  c.twelve_bit = record[2] & 0x20;
  c.monochrome = record[2] & 0x10;
  c.chroma_subsampling_x = record[2] & 0x08;
  c.chroma_subsampling_y = record[2] & 0x04;
  c.chroma_sample_position = record[2] & 0x03;
  c.config_obus.assign(record.begin() + kAv1ConfigFixedSize, record.end());
  return c;
}

Av1FrameSize av1_frame_size(std::span<const uint8_t> obus) {
  BitReader br(find_sequence_header(obus), "AV1 sequence header");
  return read_sequence_header_start(br).size;
}

Av1Config av1_config_from_sequence_header(std::span<const uint8_t> obus) {
  BitReader br(find_sequence_header(obus), "AV1 sequence header");
  const SequenceHeaderStart h = read_sequence_header_start(br);
  skip_sequence_tools(br, h.reduced_still_picture_header);
  Av1Config c;
  c.seq_profile = h.seq_profile;
  c.seq_level_idx_0 = h.seq_level_idx_0;
  c.seq_tier_0 = h.seq_tier_0;
  read_color_config(br, c);
  return c;
}

std::span<const uint8_t> av1_sequence_header_obu(std::span<const uint8_t> obus) {
  return find_sequence_header_obu(obus).obu;
}

std::vector<uint8_t> write_av1_config(const Av1Config& c) {
  // The layout parse_av1_config() reads; initial_presentation_delay_present 0.
  std::vector<uint8_t> out;
  out.reserve(kAv1ConfigFixedSize + c.config_obus.size());
  out.push_back(0x81);
  out.push_back(static_cast<uint8_t>((c.seq_profile & 0x07) << 5 | (c.seq_level_idx_0 & 0x1F)));
  out.push_back(static_cast<uint8_t>(
      (c.seq_tier_0 ? 0x80 : 0) | (c.high_bitdepth ? 0x40 : 0) | (c.twelve_bit ? 0x20 : 0) |
      (c.monochrome ? 0x10 : 0) | (c.chroma_subsampling_x ? 0x08 : 0) | (c.chroma_subsampling_y ? 0x04 : 0) |
      (c.chroma_sample_position & 0x03)));
  out.push_back(0x00);
  out.insert(out.end(), c.config_obus.begin(), c.config_obus.end());
  return out;
}

std::span<const uint8_t> av1_strip_temporal_delimiters(std::span<const uint8_t> tu) {
  // OBU header (AV1 §5.3.2): forbidden f(1), obu_type f(4), extension_flag f(1), has_size_field
  // f(1), reserved f(1); an extension byte when flagged; obu_size leb128 when has_size_field.
  // A temporal delimiter has an empty payload, so with a size field it is 2 bytes (0x12 0x00).
  while (tu.size() >= 2) {
    const uint8_t h = tu[0];
    if (((h >> 3) & 0x0F) != kObuTemporalDelimiter || (h & 0x02) == 0) break;
    const size_t size_at = (h & 0x04) ? 2 : 1;
    if (size_at >= tu.size() || tu[size_at] != 0) break;  // a delimiter with a payload: leave it
    tu = tu.subspan(size_at + 1);
  }
  return tu;
}

}  // namespace rill::protocol
