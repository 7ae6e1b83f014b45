#pragma once
// StreamKey: what names a live stream — an application and a stream name. Both follow the one
// name rule of core/name_rule.h, which every protocol applies (RTMP publish/play, the HTTP
// routes, the worker link) and the configuration applies to app names.
// The query that may follow a name ("live/cam?token=x") is not part of the key; sessions keep it
// apart (split_query) and hand it to the admission gate.
#include <compare>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "rill/core/name_rule.h"

namespace rill::media {

using core::is_valid_name;
using core::kMaxNameLength;
using core::name_error;

struct StreamKey {
  std::string app;
  std::string name;

  // A key from two names; nullopt (with *why filled when given) unless both follow the rule.
  static std::optional<StreamKey> make(std::string_view app, std::string_view name, std::string* why = nullptr);
  // "app/name" -> key (exactly one '/'); nullopt when malformed.
  static std::optional<StreamKey> parse(std::string_view text, std::string* why = nullptr);

  // "app/name": the form used in logs, the ownership table and the worker link.
  std::string str() const {
    std::string s;
    s.reserve(app.size() + 1 + name.size());  // one allocation at most (app + "/" + name made two)
    s.append(app).append(1, '/').append(name);
    return s;
  }

  auto operator<=>(const StreamKey&) const = default;
  bool operator==(const StreamKey&) const = default;
};

// Splits "name?query" (an RTMP play/publish argument, or a connect app "live?token=1") into the
// name and the raw query (without the '?'); trailing '/' of the name are dropped, as RTMP clients
// add them to the app.
struct NameAndQuery {
  std::string name;
  std::string query;
};
NameAndQuery split_query(std::string_view text);

}  // namespace rill::media

template <>
struct std::hash<rill::media::StreamKey> {
  size_t operator()(const rill::media::StreamKey& k) const noexcept {
    return std::hash<std::string>()(k.app) * 31 + std::hash<std::string>()(k.name);
  }
};
