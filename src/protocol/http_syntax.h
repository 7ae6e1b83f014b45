#pragma once
// Pieces of HTTP/1.1 syntax (RFC 9110 §5, RFC 9112 §2, §5) that the request head parser and the
// chunked body decoder share (http_request_head.cpp, http_chunked_decoder.cpp); private to
// protocol/. A byte's class is one lookup in a 256-entry table; a field line is checked for
// control bytes eight bytes at a time.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace rill::protocol::http_syntax {

inline constexpr size_t kNpos = std::string_view::npos;

// The bits of a byte's class.
enum ByteClass : uint8_t {
  kTchar = 1,    // RFC 9110 §5.6.2 tchar: what a method and a field name are made of
  kVisible = 2,  // VCHAR, %x21-7E: what a request-target is made of (RFC 9112 §3.2)
  kCtl = 4,      // a byte no line may hold: a control byte other than HTAB and CR, or DEL (RFC 9110 §5.5)
  kCr = 8,       // CR, which a line holds only as its CRLF's
};

constexpr std::array<uint8_t, 256> make_byte_classes() {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    const std::string_view marks = "!#$%&'*+-.^_`|~";
    uint8_t k = 0;
    if (alnum || marks.find(static_cast<char>(c)) != kNpos) k |= kTchar;
    if (c >= 0x21 && c <= 0x7e) k |= kVisible;
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) k |= kCtl;
    if (c == '\r') k |= kCr;
    t[static_cast<size_t>(c)] = k;
  }
  return t;
}
inline constexpr std::array<uint8_t, 256> kByteClass = make_byte_classes();

inline uint8_t byte_class(char c) { return kByteClass[static_cast<unsigned char>(c)]; }
inline bool is_ows(char c) { return c == ' ' || c == '\t'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The end of the run of bytes from `p` whose class has the bit `mask` (one bit): four bytes a
// turn while all four have it.
inline const char* skip_class(const char* p, const char* end, uint8_t mask) {
  while (end - p >= 4 &&
         (byte_class(p[0]) & byte_class(p[1]) & byte_class(p[2]) & byte_class(p[3]) & mask) != 0)
    p += 4;
  while (p < end && (byte_class(*p) & mask) != 0) ++p;
  return p;
}

// The end of the run of bytes from `p` whose class has no bit of `mask`.
inline const char* skip_class_not(const char* p, const char* end, uint8_t mask) {
  while (p < end && (byte_class(*p) & mask) == 0) ++p;
  return p;
}

bool is_token(std::string_view s);

inline std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

// True when no byte of a line (its line end taken off) is one that no line may hold: a control
// byte other than HTAB, DEL, a CR (RFC 9110 §5.5, RFC 9112 §2.2); first_bad_byte(s, 0, true)
// finds none. The bytes before `from` are known to be none of them. Eight bytes at a time.
bool is_clean_line(std::string_view s, size_t from = 0);

std::string hex_byte(unsigned char c);  // "0x1b"
// For a reason: printable ASCII as is, every other byte as \xNN, at most 40 bytes shown, quoted.
std::string quoted(std::string_view s);

// The first byte of `s` from `from` that no line may hold, or kNpos: a forbidden control byte or
// a bare CR (RFC 9112 §2.2: a CR not followed by LF MUST be rejected or replaced; we reject). In
// a line not yet ended (`ended` false) a final CR may still turn out to be the CRLF's.
size_t first_bad_byte(std::string_view s, size_t from, bool ended);
std::string bad_byte_why(std::string_view s, size_t i);  // "bare CR at byte 4"

enum class LineStep { Line, Partial, TooLong };

// Takes the bytes of `in` from `pos` up to the next LF into a line that may hold at most
// `max_with_lf` bytes, its LF included. Line: `line` views the line without its LF (inside `in`
// when the whole line is there, in `buf` otherwise) and `pos` is past the LF. Partial: every byte
// went to `buf`, which still has room for an LF. TooLong: `buf` holds max_with_lf bytes without
// an LF; they are the same bytes whatever way the input was split.
LineStep next_line(std::span<const uint8_t> in, size_t& pos, size_t max_with_lf, std::string& buf,
                   std::string_view& line);

// A field line of a head or a trailer: name ":" OWS value OWS (RFC 9112 §5). Empty when good,
// else why not. Control bytes were refused before.
std::string field_line_error(std::string_view line, std::string_view& name, std::string_view& value);

}  // namespace rill::protocol::http_syntax
