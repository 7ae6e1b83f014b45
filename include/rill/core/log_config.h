#pragma once
// What a process logs and where: the `log:` section of the configuration, defined here so that
// logging setup (core/log.h) does not depend on the configuration module.
#include <optional>
#include <string>

namespace rill::core {

struct LogConfig {
  std::string level = "info";             // trace|debug|info|warn|error|critical|off
  std::optional<std::string> file;        // null: stderr
  std::optional<std::string> access_log;  // null: no access log
  bool operator==(const LogConfig&) const = default;
};

}  // namespace rill::core
