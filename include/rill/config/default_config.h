#pragma once
#include <string_view>

namespace rill::config {
// The text of conf/rill.yaml, embedded at build time; used when `rill` runs without -c.
std::string_view default_config_yaml();
}  // namespace rill::config
