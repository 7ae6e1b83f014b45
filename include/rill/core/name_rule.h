#pragma once
// The one rule for application and stream names, applied by the configuration (app names), RTMP
// publish/play, the HTTP routes and the worker link; media/stream_key.h builds keys with it.
//
// A name is 1 to kMaxNameLength bytes of [A-Za-z0-9_.~-], is not "." and holds no "..". The set
// is the RFC 3986 §2.3 unreserved characters, so a name needs no escaping in a URL, a file name
// or a log line, and no part of it can act as a "." / ".." path step wherever it ends up.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace rill::core {

inline constexpr size_t kMaxNameLength = 128;

// Why `name` breaks the rule ("empty", "longer than 128 bytes", "'.' and '..' are not allowed",
// "character 0x2f not allowed"), or nullopt when it follows it.
std::optional<std::string> name_error(std::string_view name);
inline bool is_valid_name(std::string_view name) { return !name_error(name).has_value(); }

}  // namespace rill::core
