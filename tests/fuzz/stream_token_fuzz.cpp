// Fuzz target: the query-string parser and the token verifier (protocol/query_string.h,
// protocol/stream_token.h), and the playlist URI rewriting fed with what token_part_of lets through.
// Invariants: no crash; verify_token never admits a query that lacks the sign of its expires
// under the test secret; a query longer than kMaxTokenQuery is refused; token_part_of returns
// only URL-safe text with both parts; the rewritten playlist keeps every line count.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rill/protocol/hls_uri_query.h"
#include "rill/protocol/query_string.h"
#include "rill/protocol/stream_token.h"

using namespace rill::protocol;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

size_t lines(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view query(reinterpret_cast<const char*>(data), size);
  const QueryParams params = parse_query(query);
  for (const auto& [k, v] : params) check(k.size() + v.size() <= query.size());
  (void)encode_form(params);
  const int64_t now = 1767225000;
  const auto refusal = verify_token("k3y", "play", "live", "cam", query, now);
  if (query.size() > kMaxTokenQuery) check(refusal.has_value());
  if (!refusal) {
    // Admitted: the query holds the right sign of an expires not in the past.
    const std::string* expires = query_value(params, "expires");
    const std::string* sign = query_value(params, "sign");
    check(expires && sign && std::stoll(*expires) >= now);
    check(*sign == token_sign("k3y", "play", "live", "cam", std::stoll(*expires)));
  }
  const std::string part = token_part_of(query);
  if (!part.empty()) {
    check(part.starts_with("expires=") && part.find("&sign=") != std::string::npos);
    check(part.find_first_of("\r\n\"' <>#") == std::string::npos);
  }
  const std::string playlist = "#EXTM3U\n#EXTINF:1.000,\ncam/1.ts\n";
  const std::string rewritten = playlist_with_uri_query(playlist, part);
  check(lines(rewritten) == lines(playlist));
  return 0;
}
