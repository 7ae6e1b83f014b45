#pragma once
// Opus helpers: the Opus identification header (RFC 7845 §5.1, "OpusHead": the body of an
// E-RTMP Opus SequenceStart, as ffmpeg's extradata) and the OpusSpecificBox dOps that an MP4
// Opus sample entry carries ("Encapsulation of Opus in ISO Base Media File Format" §4.3.2).
// Pure bytes; malformed input throws ProtocolError.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rill::protocol {

struct OpusConfig {
  uint8_t channels = 2;            // output channel count
  uint16_t pre_skip = 0;           // samples at 48 kHz to discard at the start
  uint32_t input_sample_rate = 0;  // informational
  int16_t output_gain = 0;         // Q7.8 dB
  uint8_t channel_mapping_family = 0;
  uint8_t stream_count = 1;              // family != 0 only
  uint8_t coupled_count = 1;             // family != 0 only
  std::vector<uint8_t> channel_mapping;  // family != 0: one entry per output channel
};

// Opus always decodes at 48 kHz; the MP4 binding's media timescale ("SHOULD be 48000", §4.3).
inline constexpr uint32_t kOpusTimescale = 48000;
inline constexpr size_t kOpusHeadMinSize = 19;

// Parses an OpusHead. Throws ProtocolError on a missing "OpusHead" magic, a major version (upper
// four bits, RFC 7845 §5.1) other than 0, 0 channels, a mapping family != 0 without its table, or family 0
// with more than 2 channels.
OpusConfig parse_opus_head(std::span<const uint8_t> head);

// The duration of an Opus packet in 48 kHz samples, from its TOC byte (RFC 6716 §3.1: the
// configuration's frame size times the frame count of code 0-3). Throws ProtocolError on an empty
// packet, or a code 3 packet without its frame count byte, with a count of 0 or with more than
// 120 ms of frames (§3.2.5).
uint32_t opus_packet_samples(std::span<const uint8_t> packet);

// The payload of a dOps box (after its 8-byte box header): Version 0 and the fields big-endian.
std::vector<uint8_t> write_opus_dops(const OpusConfig& c);

}  // namespace rill::protocol
