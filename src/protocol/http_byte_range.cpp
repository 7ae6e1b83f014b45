#include "rill/protocol/http_byte_range.h"

#include <charconv>
#include <optional>

namespace rill::protocol {

namespace {

std::optional<uint64_t> digits(std::string_view s) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

ByteRangeRequest parse_byte_range(std::string_view header, uint64_t size) {
  using Kind = ByteRangeRequest::Kind;
  header = trim(header);
  // The range unit is case-insensitive (§14.1).
  constexpr std::string_view kUnit = "bytes=";
  if (header.size() < kUnit.size()) return {};
  for (size_t i = 0; i < kUnit.size(); ++i) {
    const char c = static_cast<char>(header[i] | (header[i] >= 'A' && header[i] <= 'Z' ? 0x20 : 0));
    if (c != kUnit[i]) return {};
  }
  const std::string_view spec = trim(header.substr(kUnit.size()));
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos || spec.find(',') != std::string_view::npos) return {};
  const std::string_view first_text = spec.substr(0, dash), last_text = spec.substr(dash + 1);
  if (first_text.empty()) {  // suffix-range
    const auto n = digits(last_text);
    if (!n) return {};
    if (*n == 0 || size == 0) return {Kind::Unsatisfiable, 0, 0};
    return {Kind::Partial, *n >= size ? 0 : size - *n, size - 1};
  }
  const auto first = digits(first_text);
  if (!first) return {};
  uint64_t last = UINT64_MAX;
  if (!last_text.empty()) {
    const auto l = digits(last_text);
    if (!l || *l < *first) return {};  // invalid: ignored (§14.1.1)
    last = *l;
  }
  if (*first >= size) return {Kind::Unsatisfiable, 0, 0};
  return {Kind::Partial, *first, last >= size ? size - 1 : last};
}

std::string content_range(const ByteRangeRequest& r, uint64_t size) {
  if (r.kind != ByteRangeRequest::Kind::Partial) return "bytes */" + std::to_string(size);
  return "bytes " + std::to_string(r.first) + "-" + std::to_string(r.last) + "/" + std::to_string(size);
}

}  // namespace rill::protocol
