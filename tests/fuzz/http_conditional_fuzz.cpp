// Fuzz target: the conditional request fields and the Range header (protocol/http_conditional.h,
// protocol/http_byte_range.h), fed the same text. Invariants: no crash; a field that is exactly
// the server's strong tag matches both If-None-Match and If-Range; "*" matches If-None-Match
// only; a Partial range lies within the representation; a date that parses is one http_date()
// writes back to the same time, and If-Modified-Since with it holds for that time and not for the
// second after.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "rill/protocol/http_byte_range.h"
#include "rill/protocol/http_conditional.h"

using namespace rill::protocol;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view field(reinterpret_cast<const char*>(data), size);
  const std::string date = http_date(1795770000);
  (void)if_none_match(field, "\"abc\"");
  (void)if_range_matches(field, "\"abc\"", date);
  (void)not_modified_since(field, date);
  if (const std::optional<int64_t> t = parse_http_date(field); t && *t >= 0 && *t < 253402300800) {
    const std::string back = http_date(*t);  // years 1970-9999: four digits, as the grammar has them
    check(parse_http_date(back) == t);
    check(not_modified_since(field, back) && !not_modified_since(field, http_date(*t + 1)));
  }
  // The field taken as the server's own validator.
  // Built by appends: GCC 12 warns (-Wrestrict, a false positive) on "literal" + std::string here.
  std::string own(1, '"');
  own.append(field.substr(0, field.find('"'))).append(1, '"');
  bool printable = true;
  for (char c : own) printable = printable && static_cast<unsigned char>(c) > 0x20 && c != 0x7f;
  if (printable) {
    check(if_none_match(own, own));
    check(if_range_matches(own, own, date));
    check(if_none_match("*", own) && !if_range_matches("*", own, date));
  }
  for (uint64_t total : {uint64_t{0}, uint64_t{1}, uint64_t{1000}, uint64_t{1} << 40}) {
    const ByteRangeRequest r = parse_byte_range(field, total);
    if (r.kind == ByteRangeRequest::Kind::Partial) check(r.first <= r.last && r.last < total);
    (void)content_range(r, total);
  }
  return 0;
}
