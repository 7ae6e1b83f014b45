#pragma once
// RTMP command messages (RTMP spec 1.0 §7.2): an AMF0 sequence of command name, transaction id,
// command object and optional arguments. Pure encode/decode; the session decides what to do.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/protocol/amf0.h"

namespace rill::protocol {

struct RtmpCommand {
  std::string name;
  double transaction_id = 0;
  Amf0Value command_object;      // null for most stream commands
  std::vector<Amf0Value> args;   // the values after the command object

  // Argument i as a string / number, or the fallback when absent or of another type.
  std::string arg_string(size_t i, std::string_view fallback = {}) const;
  double arg_number(size_t i, double fallback) const;
  bool arg_bool(size_t i, bool fallback) const;
};

// Throws ProtocolError when the payload is not "string, number, value..." AMF0.
RtmpCommand parse_command(std::span<const uint8_t> payload, const Amf0Limits& limits = {});

// name, transaction id, command object, args.
std::vector<uint8_t> encode_command(std::string_view name, double transaction_id, const Amf0Value& command_object,
                                    std::span<const Amf0Value> args = {});

// The info object of onStatus / _result (level "status" or "error", code, description).
Amf0Value status_info(std::string_view level, std::string_view code, std::string_view description);

}  // namespace rill::protocol
