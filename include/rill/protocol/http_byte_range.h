#pragma once
// The Range request header of one byte range (RFC 9110 §14.1.2, §14.2) and the Content-Range of
// its answer (§14.4). Pure text in, numbers out.
//
//   byte-range-spec = first-pos "-" [ last-pos ]   "bytes=100-199", "bytes=100-"
//   suffix-range    = "-" suffix-length            "bytes=-500" (the last 500 bytes)
//
// A header this does not take (another unit, several ranges, bad syntax) is ignored: the whole
// representation is sent with 200, which §14.2 allows ("A server MAY ignore the Range header
// field"). A range that starts at or past the end (or a suffix of 0) is unsatisfiable: 416 with
// "Content-Range: bytes */SIZE" (§15.5.17). A last-pos past the end is cut to the end (§14.1.2).
#include <cstdint>
#include <string>
#include <string_view>

namespace rill::protocol {

struct ByteRangeRequest {
  enum class Kind : uint8_t { Whole, Partial, Unsatisfiable };
  Kind kind = Kind::Whole;
  uint64_t first = 0;  // Partial: the first byte sent
  uint64_t last = 0;   // Partial: the last byte sent (inclusive)
  uint64_t length() const { return last - first + 1; }
};

// `header`: the Range field's value (empty: none); `size`: the representation's length.
ByteRangeRequest parse_byte_range(std::string_view header, uint64_t size);

// "bytes FIRST-LAST/SIZE" (§14.4), or "bytes */SIZE" for an unsatisfiable range.
std::string content_range(const ByteRangeRequest& r, uint64_t size);

}  // namespace rill::protocol
