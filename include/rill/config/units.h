#pragma once
// Durations and sizes as they are written in the configuration. The parsers are declared in
// config.h (parse_duration, parse_size); this header adds their inverse, for messages and logs.
#include <string>

#include "rill/config/config.h"

namespace rill::config {

// The shortest exact spelling in the config syntax: 2000ms -> "2s", 90000ms -> "90s", 0 -> "0s".
std::string format_duration(Duration d);
// The largest binary unit that divides exactly: 65536 -> "64KiB", 1000 -> "1000B".
std::string format_size(size_t bytes);

}  // namespace rill::config
