#include "rill/media/stream_key.h"

#include <cstdio>

namespace rill::media {

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

std::optional<StreamKey> StreamKey::make(std::string_view app, std::string_view name, std::string* why) {
  if (auto e = name_error(app)) {
    if (why) *why = "invalid app name: " + *e;
    return std::nullopt;
  }
  if (auto e = name_error(name)) {
    if (why) *why = "invalid stream name: " + *e;
    return std::nullopt;
  }
  return StreamKey{std::string(app), std::string(name)};
}

std::optional<StreamKey> StreamKey::parse(std::string_view text, std::string* why) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    if (why) *why = "expected APP/NAME";
    return std::nullopt;
  }
  return make(text.substr(0, slash), text.substr(slash + 1), why);
}

NameAndQuery split_query(std::string_view text) {
  NameAndQuery out;
  if (auto q = text.find('?'); q != std::string_view::npos) {
    out.query = std::string(text.substr(q + 1));
    text = text.substr(0, q);
  }
  while (!text.empty() && text.back() == '/') text.remove_suffix(1);
  out.name = std::string(text);
  return out;
}

}  // namespace rill::media
