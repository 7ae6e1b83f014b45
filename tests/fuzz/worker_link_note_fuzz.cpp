// Fuzzes the worker-link notes (protocol/worker_link_note.h): any line is either a WATCHING note
// that formats back to the same line, or a ProtocolError.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rill/protocol/error.h"
#include "rill/protocol/worker_link_note.h"

using namespace rill::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  try {
    const bool w = parse_link_watching(line);
    std::string back = format_link_watching(w);
    back.pop_back();  // the '\n'
    std::string_view in = line;
    if (!in.empty() && in.back() == '\r') in.remove_suffix(1);
    if (back != in) abort();
  } catch (const ProtocolError&) {
  }
  return 0;
}
