#pragma once
// Pieces of HTTP/1.1 syntax (RFC 9110 §5, RFC 9112 §2, §5) that the request head parser and the
// chunked body decoder share (http_request_head.cpp, http_chunked_decoder.cpp); private to
// protocol/. A byte's class is one lookup in a 256-entry table; a field line is checked for
// control bytes eight bytes at a time.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// Not zero when one of the eight bytes of `x` (as loaded from memory on a little-endian machine)
// is below 0x20 or is DEL (0x7f); its lowest set bit is then in the first such byte. A byte below
// 0x20 borrows in x - 0x20.. (and only a byte below 0x80 keeps its high bit clear in x); DEL is a
// zero byte of x ^ 0x7f... A borrow only runs towards higher bytes, so the bits it sets sit above
// a byte that is one: the lowest bit is exact.
inline uint64_t control_bytes(uint64_t x) {
  constexpr uint64_t kOnes = 0x0101010101010101;
  constexpr uint64_t kHighs = 0x8080808080808080;
  const uint64_t below_space = (x - kOnes * 0x20) & ~x & kHighs;
  const uint64_t y = x ^ (kOnes * 0x7f);
  return below_space | ((y - kOnes) & ~y & kHighs);
}

// The first byte from `p` below 0x20 or DEL (HTAB, CR and LF included), or `end`: where a field
// value stops. Sixteen bytes a compare where SSE2 is there (every x86-64), else eight a word.
inline const char* find_control(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i max_control = _mm_set1_epi8(0x1f);
  const __m128i del = _mm_set1_epi8(0x7f);
  for (; end - p >= 16; p += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // x <= 0x1f (unsigned): min(x, 0x1f) == x
    const __m128i hits =
        _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(x, max_control), x), _mm_cmpeq_epi8(x, del));
    if (const int found = _mm_movemask_epi8(hits); found != 0)
      return p + std::countr_zero(static_cast<unsigned>(found));
  }
#endif
  if constexpr (std::endian::native == std::endian::little) {
    for (; end - p >= 8; p += 8) {
      uint64_t x;
      std::memcpy(&x, p, sizeof x);
      if (const uint64_t found = control_bytes(x); found != 0) return p + std::countr_zero(found) / 8;
    }
  }
  while (p < end && static_cast<unsigned char>(*p) >= 0x20 && *p != 0x7f) ++p;
  return p;
}

inline char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// ASCII case-insensitive equality (field names, tokens).
inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

// The fields a request's framing and connection depend on (RFC 9112 §3.2, §6, §9.3; RFC 9110
// §10.1.1), told apart from the others by their name.
enum class Framing : uint8_t { Other, ContentLength, TransferEncoding, Connection, Expect, Host };
inline Framing framing_field(std::string_view name) {
  // Most names are none of them: told apart by their length, then their first letter.
  const char first = ascii_lower(name.empty() ? '\0' : name[0]);
  switch (name.size()) {
    case 4:
      return first == 'h' && iequals(name, "Host") ? Framing::Host : Framing::Other;
    case 6:
      return first == 'e' && iequals(name, "Expect") ? Framing::Expect : Framing::Other;
    case 10:
      return first == 'c' && iequals(name, "Connection") ? Framing::Connection : Framing::Other;
    case 14:
      return first == 'c' && iequals(name, "Content-Length") ? Framing::ContentLength : Framing::Other;
    case 17:
      return first == 't' && iequals(name, "Transfer-Encoding") ? Framing::TransferEncoding : Framing::Other;
    default:
      return Framing::Other;
  }
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
