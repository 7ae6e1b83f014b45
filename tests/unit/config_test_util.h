#pragma once
// Helpers of the configuration tests (config_test.cpp, security_config_test.cpp).
#include <gtest/gtest.h>

#include <string>

#include "rill/config/config.h"

namespace rill::config {

inline const std::string kApps = "apps:\n  live: {}\n";
// For appending options of the app: "    key: value\n" lines go on from line 3.
inline const std::string kLive = "apps:\n  live:\n";

inline Config load(const std::string& yaml) { return load_config_string(yaml, "t.yaml"); }

// The what() of the ConfigError that loading `yaml` raises ("" and a test failure if none).
inline std::string error_of(const std::string& yaml) {
  try {
    load(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError for:\n" << yaml;
  return "";
}

template <class F>
std::string error_of_call(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "expected to find: " << (needle) << "\n                in: " << (haystack)

}  // namespace rill::config
