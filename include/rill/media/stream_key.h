#pragma once
// StreamKey: what names a live stream — an application and a stream name — and the one rule every
// protocol applies to both (RTMP publish/play, the HTTP routes, the worker link).
//
// The rule: 1 to kMaxNameLength bytes of [A-Za-z0-9_.~-], not "." and with no ".." anywhere. The
// set is the RFC 3986 §2.3 unreserved characters, so a name needs no escaping in a URL, a file
// name or a log line, and no part of a name can act as a "." / ".." path step wherever it ends
// up (HLS URLs today, DVR files later). The query that
// may follow a name ("live/cam?token=x") is not part of the key; sessions keep it apart.
#include <compare>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace rill::media {

inline constexpr size_t kMaxNameLength = 128;

// Why `name` breaks the rule ("empty", "longer than 128 bytes", "'.' and '..' are not allowed",
// "character 0x2f not allowed"), or nullopt when it is a valid app or stream name.
std::optional<std::string> name_error(std::string_view name);
inline bool is_valid_name(std::string_view name) { return !name_error(name).has_value(); }

struct StreamKey {
  std::string app;
  std::string name;

  // A key from two names; nullopt (with *why filled when given) unless both follow the rule.
  static std::optional<StreamKey> make(std::string_view app, std::string_view name, std::string* why = nullptr);
  // "app/name" -> key (exactly one '/'); nullopt when malformed.
  static std::optional<StreamKey> parse(std::string_view text, std::string* why = nullptr);

  // "app/name": the form used in logs, the ownership table and the worker link.
  std::string str() const { return app + "/" + name; }

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
