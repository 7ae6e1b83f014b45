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

// The payload of the first sequence header OBU.
std::span<const uint8_t> find_sequence_header(std::span<const uint8_t> obus) {
  size_t pos = 0;
  while (pos < obus.size()) {
    const uint8_t h = obus[pos++];
    const uint8_t type = (h >> 3) & 0x0F;
    if (h & 0x04) ++pos;  // obu_extension_header
    if ((h & 0x02) == 0) {
      // No obu_size: the OBU runs to the end (binding §2.3.3 requires size fields, be lenient).
      if (type == kObuSequenceHeader && pos <= obus.size()) return obus.subspan(pos);
      break;
    }
    const uint64_t size = read_leb128(obus, pos);
    if (size > obus.size() - pos)
      throw ProtocolError("AV1 OBU: obu_size " + std::to_string(size) + " past the data");
    if (type == kObuSequenceHeader) return obus.subspan(pos, size);
    pos += size;
  }
  throw ProtocolError("AV1: no sequence header OBU");
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
  // sequence_header_obu() (AV1 §5.5.1), up to max_frame_height_minus_1.
  BitReader br(find_sequence_header(obus), "AV1 sequence header");
  br.bits(3, "seq_profile");
  br.bits(1, "still_picture");
  if (br.flag("reduced_still_picture_header")) {
    br.bits(5, "seq_level_idx[0]");
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
      if (br.bits(5, "seq_level_idx") > 7) br.bits(1, "seq_tier");
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
  Av1FrameSize s;
  s.width = br.bits(width_bits, "max_frame_width_minus_1") + 1;
  s.height = br.bits(height_bits, "max_frame_height_minus_1") + 1;
  return s;
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
