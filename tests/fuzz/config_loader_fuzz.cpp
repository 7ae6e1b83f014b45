// Fuzz target: the YAML configuration loader. Any input either loads into a Config that passes
// its own validation, or is refused with a ConfigError (FILE:LINE:COL: message) — never another
// exception, a crash or a hang. A loaded config must load the same from its source again.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "rill/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // configuration files are small; keep executions fast
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    rill::config::Config c = rill::config::load_config_string(text, "fuzz.yaml");
    rill::config::Config again = rill::config::load_config_string(text, "fuzz.yaml");
    if (!(c == again)) std::abort();  // loading is deterministic
  } catch (const rill::config::ConfigError&) {
  }
  return 0;
}
