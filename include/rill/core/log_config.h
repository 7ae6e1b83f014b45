#pragma once
// What a process logs and where: the `log:` section of the configuration, defined here so that
// logging setup (core/log.h) does not depend on the configuration module.
#include <optional>
#include <string>
#include <vector>

#include "rill/core/access_line.h"

namespace rill::core {

struct LogConfig {
  std::string level = "info";             // trace|debug|info|warn|error|critical|off
  std::optional<std::string> file;        // null: stderr
  bool json = false;                      // format: json (one object per line) instead of text
  std::optional<std::string> access_log;  // null: no access log
  AccessFormat access_format = AccessFormat::Combined;
  // Query parameters whose values the access log writes as REDACTED: `sign` (the signed token)
  // and the names other token schemes use; the configuration's list replaces this one and
  // always keeps `sign`.
  std::vector<std::string> redact_params = {"sign", "token", "secret", "password", "passwd", "key", "auth"};
  bool operator==(const LogConfig&) const = default;
};

}  // namespace rill::core
