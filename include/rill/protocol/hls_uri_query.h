#pragma once
// HLS segment URIs that carry the playlist request's token (docs/security.md): a player fetches
// each URI of a media playlist as written (RFC 8216 §4.1: relative to the playlist's URI, query
// included), so appending "?expires=..&sign=.." to them lets hls.js and Safari fetch segments of
// a token-protected stream with no extra work.
#include <string>
#include <string_view>

namespace rill::protocol {

// `playlist` with "?query" (or "&query" where a URI has one) after every URI line (every line
// that is neither empty nor a tag/comment starting with '#') and inside every tag's URI="..."
// attribute (EXT-X-MAP, EXT-X-PART, EXT-X-PRELOAD-HINT). `query` must be URL-safe.
std::string playlist_with_uri_query(std::string_view playlist, std::string_view query);

}  // namespace rill::protocol
