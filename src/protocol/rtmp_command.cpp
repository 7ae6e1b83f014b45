#include "rill/protocol/rtmp_command.h"

namespace rill::protocol {

std::string RtmpCommand::arg_string(size_t i, std::string_view fallback) const {
  if (i < args.size() && args[i].is_string()) return args[i].as_string();
  return std::string(fallback);
}

double RtmpCommand::arg_number(size_t i, double fallback) const {
  if (i < args.size() && args[i].is_number()) return args[i].as_number();
  return fallback;
}

bool RtmpCommand::arg_bool(size_t i, bool fallback) const {
  if (i < args.size() && args[i].is_bool()) return args[i].as_bool();
  if (i < args.size() && args[i].is_number()) return args[i].as_number() != 0;
  return fallback;
}

RtmpCommand parse_command(std::span<const uint8_t> payload, const Amf0Limits& limits) {
  Amf0Decoder dec(payload, limits);
  RtmpCommand cmd;
  Amf0Value name = dec.decode();
  if (!name.is_string()) {
    throw ProtocolError(std::string("command message: expected the command name (AMF0 string), found ") +
                        name.type_name());
  }
  cmd.name = name.as_string();
  // §7.2: every command carries a transaction id; a few clients omit the trailing values.
  if (dec.at_end()) return cmd;
  Amf0Value tid = dec.decode();
  if (tid.is_number()) cmd.transaction_id = tid.as_number();
  if (dec.at_end()) return cmd;
  cmd.command_object = dec.decode();
  while (!dec.at_end()) cmd.args.push_back(dec.decode());
  return cmd;
}

std::vector<uint8_t> encode_command(std::string_view name, double transaction_id, const Amf0Value& command_object,
                                    std::span<const Amf0Value> args) {
  std::vector<uint8_t> out;
  out.reserve(128);
  Amf0Encoder enc(out);
  enc.write_string(name);
  enc.write_number(transaction_id);
  enc.write_value(command_object);
  for (const auto& a : args) enc.write_value(a);
  return out;
}

Amf0Value status_info(std::string_view level, std::string_view code, std::string_view description) {
  Amf0Value v = Amf0Value::object();
  v.set("level", Amf0Value::string(std::string(level)));
  v.set("code", Amf0Value::string(std::string(code)));
  v.set("description", Amf0Value::string(std::string(description)));
  return v;
}

}  // namespace rill::protocol
