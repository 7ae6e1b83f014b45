// Fuzz target: the access log's redaction and line rendering (core/access_line.h), fed with a
// query string and the same bytes as every client-given field.
// Invariants: no crash; after redact_query, the query as the token check parses it
// (protocol/query_string.h) has no `sign` or `token` value other than REDACTED; a combined line
// has no line break and exactly its 12 field quotes (a client's '"' is escaped); a JSON line has
// no raw control byte.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "rill/core/access_line.h"
#include "rill/protocol/query_string.h"

using namespace rill;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> names = {"sign", "token"};
  const std::string redacted = core::redact_query(input, names);
  for (const auto& [k, v] : protocol::parse_query(redacted)) {
    if (k == "sign" || k == "token") check(v.empty() || v == "REDACTED");
  }
  check(core::redact_target("/live/a.m3u8?" + std::string(input), names) == "/live/a.m3u8?" + redacted);

  core::SessionAccess a;
  a.peer = "[::1]:1935";  // the socket's, never the client's
  a.protocol = "rtmp";
  a.command = "play";
  a.app = input;
  a.name = input;
  a.args = redacted;
  a.close_reason = input;
  a.agent = input;
  a.referer = input;
  a.duration_ms = static_cast<int64_t>(size) * 1000003;
  const std::string combined = core::format_session_access(a, core::AccessFormat::Combined, 1796438609);
  check(combined.find_first_of("\r\n") == std::string::npos);
  check(std::count(combined.begin(), combined.end(), '"') == 12);
  const std::string json = core::format_session_access(a, core::AccessFormat::Json, 1796438609);
  check(std::none_of(json.begin(), json.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }));
  a.peer = input;  // the address's parse: no invariant beyond not crashing
  (void)core::format_session_access(a, core::AccessFormat::Combined, 1796438609);
  return 0;
}
