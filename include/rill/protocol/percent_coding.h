#pragma once
// Percent-encoding (RFC 3986 §2.1): the one decoder and encoder of every layer, with the two
// strictnesses Rill needs. Pure bytes.
//   Strict  a request path, an API query parameter: '%' must start two hex digits that do not make
//           NUL, '+' is a plus; anything else fails (the request is answered 400).
//   Form    a stream URL's query string, a callback's form (application/x-www-form-urlencoded):
//           '+' is a space and a malformed escape is kept as written — clients send anything there,
//           and the check that reads a value (a token, a callback) decides what it accepts.
#include <string>
#include <string_view>

namespace rill::protocol {

enum class PercentDecoding { Strict, Form };

// 0-15 for a hex digit (either case), -1 otherwise.
int hex_digit_value(char c);
// Decodes `in` into `out` (replacing it). False only in Strict mode, on a malformed escape or an
// escaped NUL (`out` is then unspecified).
bool percent_decode(std::string_view in, std::string& out, PercentDecoding mode = PercentDecoding::Strict);
// Escapes everything but the RFC 3986 unreserved characters ('-', '.', '_', '~', letters, digits).
std::string percent_encode(std::string_view text);

}  // namespace rill::protocol
