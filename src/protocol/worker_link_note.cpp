#include "rill/protocol/worker_link_note.h"

#include "rill/protocol/error.h"
#include "rill/protocol/worker_link_frame.h"

namespace rill::protocol {

namespace {
constexpr std::string_view kWatching = "WATCHING ";
}  // namespace

std::string format_link_watching(bool watching) {
  std::string s(kWatching);
  s += watching ? "1\n" : "0\n";
  return s;
}

bool parse_link_watching(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > kLinkMaxRequestLine) throw ProtocolError("worker link note longer than 512 bytes");
  if (line == "WATCHING 1") return true;
  if (line == "WATCHING 0") return false;
  std::string shown(line.substr(0, 64));
  for (char& c : shown) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  throw ProtocolError("unknown worker link note '" + shown + "' (expected WATCHING 0|1)");
}

}  // namespace rill::protocol
