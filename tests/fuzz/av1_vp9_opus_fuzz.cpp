// Fuzzes the AV1, VP9 and Opus configuration parsers, their CODECS strings and the fMP4 init
// section made from them, the record made from a sequence header OBU, and an Opus packet's
// duration. Input: selector(1), then the record / header / frame / OBUs / packet.
// Invariants: no crash; a parsed record gives a CODECS string with its sample entry's prefix; an
// init section that builds contains the configuration box; dOps of a parsed OpusHead is 11 bytes
// (family 0) or 13 + channels; a record written from a sequence header parses back to the same
// fields with the OBU as configOBUs; an Opus packet lasts at most 120 ms (RFC 6716 §3.2.5).
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "rill/protocol/av1.h"
#include "rill/protocol/codecs_string.h"
#include "rill/protocol/error.h"
#include "rill/protocol/fmp4_muxer.h"
#include "rill/protocol/opus.h"
#include "rill/protocol/vp9.h"

using namespace rill::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::span<const uint8_t> in(data + 1, size - 1);
  const std::vector<uint8_t> bytes(in.begin(), in.end());
  try {
    switch (data[0] % 7) {
      case 0: {
        const Av1Config c = parse_av1_config(in);
        if (av1_codecs_string(in).rfind("av01.", 0) != 0) std::abort();
        try {
          const Av1FrameSize s = av1_frame_size(c.config_obus);
          if (s.width == 0 || s.height == 0) std::abort();
        } catch (const ProtocolError&) {
        }
        Fmp4Tracks t;
        t.has_video = true;
        t.video_codec = Fmp4VideoCodec::Av1;
        t.video_record = bytes;
        Fmp4Muxer m(t);
        if (m.init_segment().size() < bytes.size()) std::abort();
        break;
      }
      case 1: {
        parse_vpc_config(in);
        if (vp9_codecs_string(in).rfind("vp09.", 0) != 0) std::abort();
        Fmp4Tracks t;
        t.has_video = true;
        t.video_codec = Fmp4VideoCodec::Vp9;
        t.video_record = bytes;
        Fmp4Muxer m(t);
        break;
      }
      case 2: {
        const OpusConfig c = parse_opus_head(in);
        const size_t n = write_opus_dops(c).size();
        if (n != (c.channel_mapping_family == 0 ? 11u : 13u + c.channels)) std::abort();
        Fmp4Tracks t;
        t.has_audio = true;
        t.audio_codec = Fmp4AudioCodec::Opus;
        t.opus_head = bytes;
        Fmp4Muxer m(t);
        break;
      }
      case 3: {
        if (const auto s = vp9_key_frame_size(in); s && (s->width == 0 || s->height == 0)) std::abort();
        break;
      }
      case 4: {
        const auto rest = av1_strip_temporal_delimiters(in);
        if (rest.size() > in.size() || (!rest.empty() && rest.data() + rest.size() != in.data() + in.size()))
          std::abort();
        break;
      }
      case 5: {
        Av1Config c = av1_config_from_sequence_header(in);
        const auto obu = av1_sequence_header_obu(in);
        c.config_obus.assign(obu.begin(), obu.end());
        const Av1Config back = parse_av1_config(write_av1_config(c));
        if (back.seq_profile != c.seq_profile || back.seq_level_idx_0 != c.seq_level_idx_0 ||
            back.seq_tier_0 != c.seq_tier_0 || back.high_bitdepth != c.high_bitdepth ||
            back.twelve_bit != c.twelve_bit || back.monochrome != c.monochrome ||
            back.chroma_subsampling_x != c.chroma_subsampling_x ||
            back.chroma_subsampling_y != c.chroma_subsampling_y ||
            back.chroma_sample_position != c.chroma_sample_position || back.config_obus != c.config_obus)
          std::abort();
        break;
      }
      case 6: {
        if (opus_packet_samples(in) > 120 * 48) std::abort();
        break;
      }
    }
  } catch (const ProtocolError&) {
  }
  return 0;
}
