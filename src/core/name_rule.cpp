#include "rill/core/name_rule.h"

#include <array>
#include <cstdio>

namespace rill::core {

namespace {

// [A-Za-z0-9_.~-] by table: one load a byte (every request's stream path checks two names).
constexpr std::array<bool, 256> kNameChars = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) {
    t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == '~';
  }
  return t;
}();

bool name_char(char c) { return kNameChars[static_cast<unsigned char>(c)]; }

// Whether `name` follows the rule, in one pass over its bytes: the common case (every stream path
// of every request checks two names) needs no string built and no second scan for "..".
bool follows_rule(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  bool dot = false;  // the previous byte was '.'
  for (char c : name) {
    if (!name_char(c) || (dot && c == '.')) return false;
    dot = c == '.';
  }
  return name.size() != 1 || name[0] != '.';
}

}  // namespace

std::optional<std::string> name_error(std::string_view name) {
  if (follows_rule(name)) return std::nullopt;
  if (name.empty()) return std::string("empty");
  if (name.size() > kMaxNameLength) return "longer than " + std::to_string(kMaxNameLength) + " bytes";
  if (name == "." || name.find("..") != std::string_view::npos) return std::string("'.' and '..' are not allowed");
  for (char c : name) {
    if (!name_char(c)) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "character 0x%02x not allowed", static_cast<unsigned char>(c));
      return std::string(buf);
    }
  }
  return std::nullopt;
}

}  // namespace rill::core
