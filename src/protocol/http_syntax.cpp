#include "http_syntax.h"

#include <algorithm>
#include <cstdio>

namespace rill::protocol::http_syntax {

bool is_token(std::string_view s) {
  return !s.empty() && skip_class(s.data(), s.data() + s.size(), kTchar) == s.data() + s.size();
}

bool is_clean_line(std::string_view s, size_t from) {
  const char* p = s.data() + from;
  const char* end = s.data() + s.size();
  if (s.size() < 8) return skip_class_not(p, end, kCtl | kCr) == end;
  // Eight bytes a word; the last word ends at the line's end and may go back before `from`
  // (those bytes are clean). A line with a control byte (HTAB may be there) is then looked at
  // byte by byte.
  const auto word = [](const char* at) {
    uint64_t x;
    std::memcpy(&x, at, sizeof x);
    return x;
  };
  uint64_t found = 0;
  for (; end - p > 16; p += 16) found |= control_bytes(word(p)) | control_bytes(word(p + 8));
  if (end - p > 8) found |= control_bytes(word(p));
  if (p != end) found |= control_bytes(word(end - 8));
  return found == 0 || skip_class_not(s.data() + from, end, kCtl | kCr) == end;
}

std::string hex_byte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", c);
  return buf;
}

std::string quoted(std::string_view s) {
  std::string out = "'";
  size_t n = 0;
  for (const char ch : s) {
    if (n++ == 40) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += ch;
    } else {
      out += "\\x";
      out += hex_byte(c).substr(2);
    }
  }
  return out + "'";
}

size_t first_bad_byte(std::string_view s, size_t from, bool ended) {
  for (size_t i = from; i < s.size(); ++i) {
    const uint8_t k = byte_class(s[i]);
    if ((k & kCtl) != 0) return i;
    if ((k & kCr) != 0 && (ended || i + 1 < s.size())) return i;
  }
  return kNpos;
}

std::string bad_byte_why(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  return (c == '\r' ? std::string("bare CR") : "control byte " + hex_byte(c)) + " at byte " +
         std::to_string(i);
}

LineStep next_line(std::span<const uint8_t> in, size_t& pos, size_t max_with_lf, std::string& buf,
                   std::string_view& line) {
  const size_t room = max_with_lf > buf.size() ? max_with_lf - buf.size() : 0;
  const size_t n = std::min(in.size() - pos, room);
  const auto* start = reinterpret_cast<const char*>(in.data() + pos);
  const auto* lf = n == 0 ? nullptr : static_cast<const char*>(std::memchr(start, '\n', n));
  if (lf != nullptr) {
    const auto len = static_cast<size_t>(lf - start);
    pos += len + 1;
    if (buf.empty()) {
      line = std::string_view(start, len);
    } else {
      buf.append(start, len);
      line = buf;
    }
    return LineStep::Line;
  }
  buf.append(start, n);
  pos += n;
  return buf.size() >= max_with_lf ? LineStep::TooLong : LineStep::Partial;
}

std::string field_line_error(std::string_view line, std::string_view& name, std::string_view& value) {
  // RFC 9112 §5.2: obs-fold is refused (a server MUST reject it or replace it; we reject), and so
  // is whitespace between the start-line and the first field (RFC 9112 §2.2).
  if (is_ows(line.front())) return "starts with whitespace (obs-fold is not accepted)";
  const size_t colon = line.find(':');
  if (colon == kNpos) return "no ':' after the field name in " + quoted(line);
  name = line.substr(0, colon);
  if (name.empty()) return "empty field name";
  // RFC 9112 §5.1: whitespace between the field name and the colon MUST be rejected with 400.
  if (is_ows(name.back())) return "whitespace before ':'";
  if (!is_token(name)) return "field name " + quoted(name) + " is not a token";
  value = trim_ows(line.substr(colon + 1));
  return {};
}

}  // namespace rill::protocol::http_syntax
