#pragma once
// Conditional requests (RFC 9110 §13): If-None-Match, If-Modified-Since and If-Range evaluated
// against a representation's validators (§8.8: its entity tag, with its quotes, and its
// Last-Modified date). Pure text in, a yes or no out.
//
//   entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE        W/"xyzzy", "xyzzy"
//   If-None-Match = "*" / #entity-tag
//   If-Modified-Since = HTTP-date
//   If-Range = entity-tag / HTTP-date
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rill::protocol {

// The IMF-fixdate of a Unix time (§5.6.7), as Last-Modified says it: "Sun, 06 Nov 1994 08:49:37 GMT".
std::string http_date(int64_t unix_seconds);

// §5.6.7: "A recipient that parses a timestamp value in an HTTP field MUST accept all three
// HTTP-date formats": the IMF-fixdate, the obsolete RFC 850 date ("Sunday, 06-Nov-94 08:49:37
// GMT") and asctime's ("Sun Nov  6 08:49:37 1994"), as a Unix time; nullopt for anything else. An
// RFC 850 two-digit year is taken as 19YY from 70 on and 20YY below (a fixed pivot: this layer has
// no clock to apply §5.6.7's "more than 50 years in the future" rule to).
std::optional<int64_t> parse_http_date(std::string_view text);

// §13.1.2: true when `field` (the If-None-Match value) is "*" or lists an entity tag that matches
// `etag` by the weak comparison (§8.8.3.2: the opaque tags are equal, W/ or not). A list that
// does not parse matches nothing.
bool if_none_match(std::string_view field, std::string_view etag);

// §13.1.3: true when `field` (the If-Modified-Since value) is one valid HTTP-date and
// `last_modified` (the representation's Last-Modified value) is not later: "the origin server
// SHOULD NOT perform the requested method if the selected representation's last modification date
// is earlier than or equal to the date provided in the field value; instead, the origin server
// SHOULD generate a 304". A field that is not a valid date ("MUST ignore"), or a `last_modified`
// that is none, gives false. The caller asks only when the request has no If-None-Match and its
// method is GET or HEAD (§13.1.3: "MUST ignore" it otherwise).
bool not_modified_since(std::string_view field, std::string_view last_modified);

// §13.1.5: true when `field` (the If-Range value) is an entity tag that matches `etag` by the
// strong comparison (neither weak, the opaque tags equal), or a date that is exactly
// `last_modified` ("If the HTTP-date validator provided exactly matches the Last-Modified field
// value"). Anything else, a weak tag included, does not match: the Range is then ignored.
bool if_range_matches(std::string_view field, std::string_view etag, std::string_view last_modified);

}  // namespace rill::protocol
