#pragma once
// URL query strings ("a=1&b=x%20y"): parsing with percent-decoding (application/x-www-form-urlencoded,
// '+' is a space), and encoding for HTML form bodies. Pure bytes.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rill/protocol/percent_coding.h"  // percent_encode, and the Form decoding used here

namespace rill::protocol {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// Every "key=value" (or bare "key") in order; empty parts are skipped; bad escapes are kept as written.
QueryParams parse_query(std::string_view query);
// The value of the first `key`, or nullptr.
const std::string* query_value(const QueryParams& params, std::string_view key);

// "k1=v1&k2=v2", both sides escaped.
std::string encode_form(const QueryParams& params);

}  // namespace rill::protocol
