#include "rill/protocol/audio_multichannel.h"

#include <string>

#include "rill/core/byte_order.h"
#include "rill/protocol/error.h"

namespace rill::protocol {

AudioMultichannelConfig parse_audio_multichannel_config(std::span<const uint8_t> body) {
  auto need = [&](size_t n, const char* what) {
    if (body.size() < n) {
      throw ProtocolError("audio MultichannelConfig: " + std::to_string(body.size()) +
                          " bytes, expected at least " + std::to_string(n) + " for " + what);
    }
  };
  need(2, "the channel order and count");
  AudioMultichannelConfig c;
  if (body[0] > static_cast<uint8_t>(AudioChannelOrder::Custom)) {
    throw ProtocolError("audio MultichannelConfig: channel order " + std::to_string(body[0]) +
                        ", expected 0, 1 or 2");
  }
  c.order = static_cast<AudioChannelOrder>(body[0]);
  c.channel_count = body[1];
  if (c.order == AudioChannelOrder::Custom) {
    need(2 + size_t{c.channel_count}, "the channel mapping");
    c.mapping.assign(body.begin() + 2, body.begin() + 2 + c.channel_count);
  } else if (c.order == AudioChannelOrder::Native) {
    need(6, "the channel flags");
    c.channel_flags = load_be32(body.data() + 2);
  }
  return c;
}

}  // namespace rill::protocol
