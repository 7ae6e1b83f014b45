#pragma once
// apps.NAME.record (docs/recording.md): which streams of an app are recorded, in which format,
// where, and when files rotate. Kept apart from config_loader.cpp, which calls read_record()
// once per app. The path template's syntax lives here too, so that the check at load time and
// the expansion when a file opens read it the same way.
//
//   path := (TEXT | "{app}" | "{name}" | "{start}" | "{start:" STRFTIME "}")*
//
// "{{" and "}}" stand for a literal brace.
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include "rill/config/config.h"
#include "rill/config/yaml_reader.h"

namespace rill::config {

// The strftime format of a bare {start}.
inline constexpr std::string_view kRecordStartFormat = "%Y-%m-%d_%H-%M-%S";

// Why `path` is not a usable template ("unknown placeholder {nmae}; did you mean {name}?",
// "must contain {name}: ..."), or nullopt.
std::optional<std::string> record_path_error(std::string_view path);

// The file name of a recording: the template with {app}, {name} and {start...} (local time of
// `start`) replaced, then `extension` (".mp4", ".flv") appended. `path` must have passed
// record_path_error().
std::string expand_record_path(std::string_view path, std::string_view app, std::string_view name,
                               std::time_t start, std::string_view extension);

// ".mp4" or ".flv".
std::string_view record_extension(RecordFormat format);
std::string_view to_string(RecordMode mode);
std::string_view to_string(RecordFormat format);

// Reads apps.X.record of `map` (the app's map) into `app`.
void read_record(const YamlReader& reader, const YamlMap& map, AppConfig& app);

}  // namespace rill::config
