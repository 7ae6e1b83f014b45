#pragma once
// apps.NAME.exec (docs/abr.md): commands run as children of the worker that owns a stream, on its
// publish (kept running while the stream lives), publish_done and record_done (one-shot). Kept
// apart from config_loader.cpp, which calls read_exec() once per app. The argument template's
// syntax lives here too, so that the check at load time and the expansion at spawn time agree:
//
//   arg := (TEXT | "{app}" | "{name}" | "{group}" | "{query}" | "{addr}" | "{path}" | "{hop}")*
//
// "{{" and "}}" stand for a literal brace.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rill/config/config.h"
#include "rill/config/yaml_reader.h"

namespace rill::config {

// What {hop} expands to: the query marker that an exec child's own publish carries, so that
// hooks do not run again for it (the anti-loop rule of docs/abr.md).
inline constexpr std::string_view kExecHopMarker = "rill_hop=exec";

// The values of an argument's placeholders.
struct ExecVars {
  std::string app;
  std::string name;
  std::string query;
  std::string addr;
  std::string path;   // record_done: the closed file
  std::string group;  // the rendition group NAME is in (hls.variants: cam of cam_hi), else NAME
};

// Why `arg` is not a usable argument template ("unknown placeholder {nmae}; ..."), or nullopt.
std::optional<std::string> exec_arg_error(std::string_view arg);
// `arg` with its placeholders replaced; `arg` must have passed exec_arg_error().
std::string expand_exec_arg(std::string_view arg, const ExecVars& vars);

// Whether `name` matches `pattern`, where '*' stands for any run of characters.
bool exec_name_matches(std::string_view pattern, std::string_view name);
// Whether `hook` runs for stream `name` published with `query` (its names, and the hop marker).
bool exec_hook_applies(const ExecHook& hook, std::string_view name, std::string_view query);

std::string_view to_string(ExecEvent e);  // "publish", "publish_done", "record_done"

// Reads apps.X.exec of `map` (the app's map) into `app`.
void read_exec(const YamlReader& reader, const YamlMap& map, AppConfig& app);

}  // namespace rill::config
