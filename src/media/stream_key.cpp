#include "rill/media/stream_key.h"

namespace rill::media {

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
