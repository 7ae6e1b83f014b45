#pragma once
// Signed stream tokens (docs/security.md): a client appends "?expires=UNIX_SECONDS&sign=HEX" to
// the stream name, where
//
//   sign = lowercase hex of HMAC-SHA256(secret, ACTION ":" APP "/" NAME ":" EXPIRES)
//
// and ACTION is "publish" or "play". Pure bytes: the caller passes the current time.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rill::protocol {

// A query longer than this is refused before it is parsed (an oversized token).
inline constexpr size_t kMaxTokenQuery = 1024;

// The lowercase hex HMAC-SHA256 of `message` under `key`.
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

// sign for (action, app/name, expires).
std::string token_sign(std::string_view secret, std::string_view action, std::string_view app, std::string_view name,
                       int64_t expires);
// "expires=E&sign=S": what `rill token` prints and a client appends after '?'.
std::string token_query(std::string_view secret, std::string_view action, std::string_view app, std::string_view name,
                        int64_t expires);

// Checks the token in `query` (raw, without '?') for (action, app/name) at `now` (UNIX seconds).
// nullopt: valid. Otherwise why it is refused ("no token", "token expired", "wrong sign", ...).
std::optional<std::string> verify_token(std::string_view secret, std::string_view action, std::string_view app,
                                        std::string_view name, std::string_view query, int64_t now);

// Just "expires=..&sign=.." out of `query` (raw, escaped as it came), or "" when either is absent:
// what an HLS playlist passes on to its segment URIs.
std::string token_part_of(std::string_view query);

}  // namespace rill::protocol
