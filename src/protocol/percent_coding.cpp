#include "rill/protocol/percent_coding.h"

namespace rill::protocol {

namespace {

bool unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

}  // namespace

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool percent_decode(std::string_view in, std::string& out, PercentDecoding mode) {
  const bool form = mode == PercentDecoding::Form;
  // A plain loop: find_first_of calls memchr on the set once per character of `in`.
  size_t first = 0;
  while (first < in.size() && in[first] != '%' && !(form && in[first] == '+')) ++first;
  if (first == in.size()) {  // the common case: nothing to decode, one copy
    out.assign(in);
    return true;
  }
  out.clear();
  out.reserve(in.size());
  out.append(in.substr(0, first));
  for (size_t i = first; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '+' && form) {
      out.push_back(' ');
      continue;
    }
    if (c != '%') {
      out.push_back(c);
      continue;
    }
    const int hi = i + 2 < in.size() ? hex_digit_value(in[i + 1]) : -1;
    const int lo = hi >= 0 ? hex_digit_value(in[i + 2]) : -1;
    const char d = static_cast<char>(hi * 16 + lo);
    if (hi < 0 || lo < 0 || (d == '\0' && !form)) {
      if (!form) return false;
      out.push_back(c);  // kept as written
      continue;
    }
    out.push_back(d);
    i += 2;
  }
  return true;
}

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (unreserved(c)) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace rill::protocol
