#pragma once
// The body of an E-RTMP v2 audio MultichannelConfig packet (AudioPacketType 4): how the channels
// of the track's audio are ordered. Rill passes the packet through to RTMP and HTTP-FLV players
// unchanged; this reads it for what the server reports and checks. Pure bytes; malformed input
// throws ProtocolError.
#include <cstdint>
#include <span>
#include <vector>

namespace rill::protocol {

// E-RTMP v2 AudioChannelOrder.
enum class AudioChannelOrder : uint8_t { Unspecified = 0, Native = 1, Custom = 2 };

struct AudioMultichannelConfig {
  AudioChannelOrder order = AudioChannelOrder::Unspecified;
  uint8_t channel_count = 0;
  std::vector<uint8_t> mapping;  // Custom: one AudioChannel per channel
  uint32_t channel_flags = 0;    // Native: AudioChannelMask
};

// "audioChannelOrder = UI8; channelCount = UI8; if (Custom) audioChannelMapping =
// UI8[channelCount]; if (Native) audioChannelFlags = UI32". Throws ProtocolError when truncated
// or when the order is not one of the three.
AudioMultichannelConfig parse_audio_multichannel_config(std::span<const uint8_t> body);

}  // namespace rill::protocol
