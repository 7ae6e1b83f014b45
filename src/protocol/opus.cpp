#include "rill/protocol/opus.h"

#include <cstring>
#include <string>

#include "rill/protocol/error.h"

namespace rill::protocol {

OpusConfig parse_opus_head(std::span<const uint8_t> head) {
  // RFC 7845 §5.1: "OpusHead" (8), version u8, channel count u8, pre-skip u16le, input sample
  // rate u32le, output gain s16le, mapping family u8, then for family != 0: stream count u8,
  // coupled count u8, channel mapping u8 x channel count.
  if (head.size() < kOpusHeadMinSize) {
    throw ProtocolError("Opus ID header: " + std::to_string(head.size()) + " bytes, expected at least 19");
  }
  if (std::memcmp(head.data(), "OpusHead", 8) != 0)
    throw ProtocolError("Opus ID header: no \"OpusHead\" magic");
  if ((head[8] >> 4) != 0) {
    throw ProtocolError("Opus ID header: version " + std::to_string(head[8]) + " (major version not 0)");
  }
  OpusConfig c;
  c.channels = head[9];
  c.pre_skip = static_cast<uint16_t>(head[10] | (head[11] << 8));
  c.input_sample_rate = uint32_t{head[12]} | (uint32_t{head[13]} << 8) | (uint32_t{head[14]} << 16) |
                        (uint32_t{head[15]} << 24);
  c.output_gain = static_cast<int16_t>(head[16] | (head[17] << 8));
  c.channel_mapping_family = head[18];
  if (c.channels == 0) throw ProtocolError("Opus ID header: channel count 0");
  if (c.channel_mapping_family == 0) {
    // "Mapping family 0 ... allowed channel counts: 1 or 2" (§5.1.1.1).
    if (c.channels > 2) {
      throw ProtocolError("Opus ID header: " + std::to_string(c.channels) +
                          " channels with mapping family 0");
    }
    c.stream_count = 1;
    c.coupled_count = c.channels == 2 ? 1 : 0;
    return c;
  }
  const size_t need = kOpusHeadMinSize + 2 + c.channels;
  if (head.size() < need) {
    throw ProtocolError("Opus ID header: " + std::to_string(head.size()) + " bytes, expected " +
                        std::to_string(need) + " for mapping family " +
                        std::to_string(c.channel_mapping_family));
  }
  c.stream_count = head[19];
  c.coupled_count = head[20];
  c.channel_mapping.assign(head.begin() + 21, head.begin() + static_cast<std::ptrdiff_t>(need));
  return c;
}

std::vector<uint8_t> write_opus_dops(const OpusConfig& c) {
  // OpusSpecificBox (Opus in ISO BMFF §4.3.2): Version u8 = 0, OutputChannelCount u8, PreSkip
  // u16, InputSampleRate u32, OutputGain s16, ChannelMappingFamily u8, and for family != 0
  // StreamCount u8, CoupledCount u8, ChannelMapping u8[OutputChannelCount]; big-endian.
  const auto gain = static_cast<uint16_t>(c.output_gain);
  std::vector<uint8_t> out = {0,
                              c.channels,
                              static_cast<uint8_t>(c.pre_skip >> 8),
                              static_cast<uint8_t>(c.pre_skip),
                              static_cast<uint8_t>(c.input_sample_rate >> 24),
                              static_cast<uint8_t>(c.input_sample_rate >> 16),
                              static_cast<uint8_t>(c.input_sample_rate >> 8),
                              static_cast<uint8_t>(c.input_sample_rate),
                              static_cast<uint8_t>(gain >> 8),
                              static_cast<uint8_t>(gain),
                              c.channel_mapping_family};
  if (c.channel_mapping_family != 0) {
    out.push_back(c.stream_count);
    out.push_back(c.coupled_count);
    out.insert(out.end(), c.channel_mapping.begin(), c.channel_mapping.end());
  }
  return out;
}

uint32_t opus_packet_samples(std::span<const uint8_t> packet) {
  // TOC byte (RFC 6716 §3.1): config f(5), stereo f(1), code f(2). Configurations 0-11 are SILK
  // with 10/20/40/60 ms frames, 12-15 hybrid with 10/20 ms, 16-31 CELT with 2.5/5/10/20 ms.
  if (packet.empty()) throw ProtocolError("Opus packet: empty, expected a TOC byte");
  const uint8_t config = packet[0] >> 3;
  static constexpr uint32_t kSilk[] = {480, 960, 1920, 2880}, kHybrid[] = {480, 960},
                            kCelt[] = {120, 240, 480, 960};
  const uint32_t frame = config < 12   ? kSilk[config % 4]
                         : config < 16 ? kHybrid[config % 2]
                                       : kCelt[config % 4];
  switch (packet[0] & 0x03) {
    case 0:
      return frame;
    case 1:
    case 2:
      return 2 * frame;
    default:  // code 3: frame count byte (v f(1), p f(1), M f(6))
      if (packet.size() < 2) throw ProtocolError("Opus packet: code 3 without its frame count byte");
      // RFC 6716 §3.2.5: "M MUST NOT be zero, and the audio duration contained within a packet
      // MUST NOT exceed 120 ms" (5760 samples at 48 kHz).
      const uint32_t count = packet[1] & 0x3F;
      if (count == 0 || count * frame > 5760)
        throw ProtocolError("Opus packet: code 3 with " + std::to_string(count) + " frames of " +
                            std::to_string(frame) + " samples, expected 1 to 120 ms in all");
      return count * frame;
  }
}

}  // namespace rill::protocol
