#include "rill/core/name_rule.h"

#include <cstdio>

namespace rill::core {

namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == '~';
}

}  // namespace

std::optional<std::string> name_error(std::string_view name) {
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
