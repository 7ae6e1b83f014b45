#include "rill/protocol/http_conditional.h"

#include <ctime>

namespace rill::protocol {

std::string http_date(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[40];
  const size_t n = std::strftime(out, sizeof out, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(out, n);
}

namespace {

constexpr std::string_view kSpace = " \t";

std::string_view trimmed(std::string_view s) {
  const size_t a = s.find_first_not_of(kSpace);
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(kSpace) - a + 1);
}

struct EntityTag {
  bool weak = false;
  std::string_view opaque;  // with its quotes
};

// One entity-tag at the start of `s`; false when there is none. `s` is left after it.
bool take_entity_tag(std::string_view& s, EntityTag& out) {
  out.weak = s.starts_with("W/");
  if (out.weak) s.remove_prefix(2);
  if (s.empty() || s.front() != '"') return false;
  const size_t close = s.find('"', 1);
  if (close == std::string_view::npos) return false;
  for (size_t i = 1; i < close; ++i) {  // etagc = %x21 / %x23-7E / obs-text
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x21 || c == 0x7f) return false;
  }
  out.opaque = s.substr(0, close + 1);
  s.remove_prefix(close + 1);
  return true;
}

// The validator this server gave; its W/ does not count in a weak comparison.
EntityTag own_tag(std::string_view etag) {
  EntityTag t;
  std::string_view s = etag;
  if (!take_entity_tag(s, t) || !s.empty()) return EntityTag{};
  return t;
}

}  // namespace

bool if_none_match(std::string_view field, std::string_view etag) {
  std::string_view s = trimmed(field);
  if (s == "*") return true;
  const EntityTag own = own_tag(etag);
  if (own.opaque.empty()) return false;
  // #entity-tag (§5.6.1): elements separated by commas, empty ones allowed.
  while (!s.empty()) {
    s = trimmed(s);
    if (s.starts_with(',')) {
      s.remove_prefix(1);
      continue;
    }
    EntityTag t;
    if (!take_entity_tag(s, t)) return false;
    if (t.opaque == own.opaque) return true;
    s = trimmed(s);
    if (!s.empty() && s.front() != ',') return false;
  }
  return false;
}

bool if_range_matches(std::string_view field, std::string_view etag, std::string_view last_modified) {
  const std::string_view v = trimmed(field);
  if (v.empty()) return false;
  if (v.front() == '"' || v.starts_with("W/")) {
    std::string_view s = v;
    EntityTag t;
    const EntityTag own = own_tag(etag);
    return take_entity_tag(s, t) && s.empty() && !t.weak && !own.weak && !own.opaque.empty() &&
           t.opaque == own.opaque;
  }
  return !last_modified.empty() && v == last_modified;
}

}  // namespace rill::protocol
