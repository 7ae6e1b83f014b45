#include "rill/protocol/query_string.h"

namespace rill::protocol {

namespace {

std::string form_decoded(std::string_view text) {
  std::string out;
  percent_decode(text, out, PercentDecoding::Form);  // never fails in Form mode
  return out;
}

}  // namespace

QueryParams parse_query(std::string_view query) {
  QueryParams params;
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view part = query.substr(start, end - start);
    if (!part.empty()) {
      const size_t eq = part.find('=');
      if (eq == std::string_view::npos) {
        params.emplace_back(form_decoded(part), std::string());
      } else {
        params.emplace_back(form_decoded(part.substr(0, eq)), form_decoded(part.substr(eq + 1)));
      }
    }
    start = end + 1;
  }
  return params;
}

const std::string* query_value(const QueryParams& params, std::string_view key) {
  for (const auto& [k, v] : params) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string encode_form(const QueryParams& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    if (!out.empty()) out += '&';
    out += percent_encode(k);
    out += '=';
    out += percent_encode(v);
  }
  return out;
}

}  // namespace rill::protocol
