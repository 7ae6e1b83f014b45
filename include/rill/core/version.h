#pragma once
// The version of this build, from one translation unit (generated from src/core/version.cpp.in by
// CMake): changing it recompiles that file alone, and a second executable of the same libraries
// can carry another version string (rill-upgrade-peer, for tests/integration/test_upgrade.py).
#include <string_view>

namespace rill::core {

std::string_view version();

}  // namespace rill::core
