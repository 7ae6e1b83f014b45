#pragma once
// Conditional requests (RFC 9110 §13): If-None-Match and If-Range evaluated against a
// representation's validators (§8.8: its entity tag, with its quotes, and its Last-Modified
// date). Pure text in, a yes or no out.
//
//   entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE        W/"xyzzy", "xyzzy"
//   If-None-Match = "*" / #entity-tag
//   If-Range = entity-tag / HTTP-date
#include <cstdint>
#include <string>
#include <string_view>

namespace rill::protocol {

// The IMF-fixdate of a Unix time (§5.6.7), as Last-Modified says it: "Sun, 06 Nov 1994 08:49:37 GMT".
std::string http_date(int64_t unix_seconds);

// §13.1.2: true when `field` (the If-None-Match value) is "*" or lists an entity tag that matches
// `etag` by the weak comparison (§8.8.3.2: the opaque tags are equal, W/ or not). A list that
// does not parse matches nothing.
bool if_none_match(std::string_view field, std::string_view etag);

// §13.1.5: true when `field` (the If-Range value) is an entity tag that matches `etag` by the
// strong comparison (neither weak, the opaque tags equal), or a date that is exactly
// `last_modified` ("If the HTTP-date validator provided exactly matches the Last-Modified field
// value"). Anything else, a weak tag included, does not match: the Range is then ignored.
bool if_range_matches(std::string_view field, std::string_view etag, std::string_view last_modified);

}  // namespace rill::protocol
