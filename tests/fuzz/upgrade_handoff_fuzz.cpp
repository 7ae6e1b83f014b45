// Fuzzes the binary upgrade's handoff (process/upgrade_handoff.h): any text either fails with a
// reason or parses into a handoff that encodes to text which parses to the same handoff.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rill/process/upgrade_handoff.h"

using namespace rill::process;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto h = parse_upgrade_handoff(text, &error);
  if (!h) {
    if (error.empty()) abort();
    return 0;
  }
  const std::string once = encode_upgrade_handoff(*h);
  auto again = parse_upgrade_handoff(once, &error);
  if (!again || encode_upgrade_handoff(*again) != once) abort();
  return 0;
}
