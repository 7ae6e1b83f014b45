#include "rill/protocol/http_request_head.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

namespace rill::protocol {

namespace {

constexpr size_t kNpos = std::string_view::npos;
// RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request line.
constexpr size_t kMaxEmptyLinesBefore = 4;
constexpr size_t kMaxChunkSizeLine = 1024;  // with its CRLF
constexpr size_t kMaxTrailer = 8192;        // every trailer line and the final CRLF
constexpr size_t kMaxChunkSizeDigits = 16;  // 16 hex digits fill a uint64_t: no overflow past this
constexpr uint64_t kMaxContentLength = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// RFC 9110 §5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" /
// "`" / "|" / "~" / DIGIT / ALPHA
bool is_tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool is_token(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(static_cast<unsigned char>(c)); });
}

bool is_ows(char c) { return c == ' ' || c == '\t'; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

// The elements of a comma-separated list (RFC 9110 §5.6.1), OWS trimmed; empty ones kept.
std::vector<std::string_view> split_list(std::string_view v) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t comma = v.find(',');
    out.push_back(trim_ows(v.substr(0, comma)));
    if (comma == kNpos) return out;
    v.remove_prefix(comma + 1);
  }
}

std::string hex_byte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", c);
  return buf;
}

// For a reason: printable ASCII as is, every other byte as \xNN, at most 40 bytes shown.
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

// A byte no line of a request may hold: a control byte other than HTAB (RFC 9110 §5.5: a field
// value is VCHAR, obs-text, SP and HTAB; the request line allows fewer still). CR is seen apart.
bool is_forbidden(unsigned char c) { return (c < 0x20 && c != '\t' && c != '\r') || c == 0x7f; }

// The first byte of `s` from `from` that no line may hold, or kNpos: a forbidden control byte or
// a bare CR (RFC 9112 §2.2: a CR not followed by LF MUST be rejected or replaced; we reject). In
// a line not yet ended (`ended` false) a final CR may still turn out to be the CRLF's.
size_t first_bad_byte(std::string_view s, size_t from, bool ended) {
  for (size_t i = from; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (is_forbidden(c)) return i;
    if (c == '\r' && (ended || i + 1 < s.size())) return i;
  }
  return kNpos;
}

std::string bad_byte_why(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  return (c == '\r' ? std::string("bare CR") : "control byte " + hex_byte(c)) + " at byte " +
         std::to_string(i);
}

enum class LineStep { Line, Partial, TooLong };

// Takes the bytes of `in` from `pos` up to the next LF into a line that may hold at most
// `max_with_lf` bytes, its LF included. Line: `line` views the line without its LF (inside `in`
// when the whole line is there, in `buf` otherwise) and `pos` is past the LF. Partial: every byte
// went to `buf`, which still has room for an LF. TooLong: `buf` holds max_with_lf bytes without
// an LF; they are the same bytes whatever way the input was split.
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

enum class Number { Ok, NotNumber, TooLarge };

// Content-Length = 1*DIGIT (RFC 9110 §8.6): no sign, no spaces; values that do not fit an int64_t
// (a file offset) are refused rather than wrapped.
Number parse_decimal(std::string_view s, uint64_t& v) {
  if (s.empty()) return Number::NotNumber;
  v = 0;
  bool large = false;
  for (const char c : s) {
    if (!is_digit(c)) return Number::NotNumber;
    const auto d = static_cast<uint64_t>(c - '0');
    if (v > (kMaxContentLength - d) / 10) large = true;
    if (!large) v = v * 10 + d;
  }
  return large ? Number::TooLarge : Number::Ok;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A field line of a head or a trailer: name ":" OWS value OWS (RFC 9112 §5). Empty when good,
// else why not. Control bytes were refused before.
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

}  // namespace

// ---- HttpRequestHead ----------------------------------------------------------------------------

const std::string* HttpRequestHead::find(std::string_view name) const {
  for (const auto& f : headers) {
    if (iequals(f.name, name)) return &f.value;
  }
  return nullptr;
}

// ---- HttpRequestHeadParser ----------------------------------------------------------------------

HttpRequestHeadParser::HttpRequestHeadParser(HttpParseLimits limits) : limits_(limits) {}

void HttpRequestHeadParser::reset() {
  state_ = State::RequestLine;
  head_ = HttpRequestHead();
  error_ = HttpHeadError();
  line_.clear();
  checked_ = 0;
  head_bytes_ = 0;
  empty_lines_ = 0;
}

HttpRequestHead HttpRequestHeadParser::take() {
  HttpRequestHead h = std::move(head_);
  head_ = HttpRequestHead();
  return h;
}

bool HttpRequestHeadParser::fail(int status, std::string why) {
  state_ = State::Error;
  error_.status = status;
  error_.why = std::move(why);
  line_.clear();
  return false;
}

std::string HttpRequestHeadParser::context() const {
  if (state_ == State::RequestLine) return "request line";
  return "header field " + std::to_string(head_.headers.size() + 1);
}

HttpRequestHeadParser::Result HttpRequestHeadParser::feed(std::span<const uint8_t> in, size_t& consumed) {
  consumed = 0;
  if (state_ == State::Complete) return Result::Complete;
  if (state_ == State::Error) return Result::Error;
  size_t pos = 0;
  while (pos < in.size()) {
    std::string_view line;
    // head_bytes_ never passes max_head: every line ended so far fitted in what was left.
    const LineStep step = next_line(in, pos, limits_.max_head - head_bytes_, line_, line);
    consumed = pos;
    if (step == LineStep::Partial) return check_partial_line() ? Result::NeedMore : Result::Error;
    if (step == LineStep::TooLong) {
      if (check_partial_line()) on_too_long();
      return Result::Error;
    }
    const bool ok = on_line(line);
    if (state_ != State::Error) {
      line_.clear();
      checked_ = 0;
    }
    if (!ok) return Result::Error;
    if (state_ == State::Complete) return Result::Complete;
  }
  return Result::NeedMore;
}

// Refuses control bytes while a line is still arriving, so that a client speaking something else
// (a TLS ClientHello, binary junk) hears 400 at once; the same bytes give the same reason when the
// line arrives whole, since on_line checks the whole line first.
bool HttpRequestHeadParser::check_partial_line() {
  const size_t i = first_bad_byte(line_, checked_, false);
  if (i != kNpos) return fail(400, context() + ": " + bad_byte_why(line_, i));
  checked_ = line_.empty() || line_.back() != '\r' ? line_.size() : line_.size() - 1;
  return true;
}

bool HttpRequestHeadParser::on_too_long() {
  if (state_ == State::RequestLine) {
    // The request line alone fills the head: 414 when it is the target that is too long.
    std::string_view l = line_;
    const size_t sp = l.find(' ');
    if (sp != kNpos) {
      std::string_view target = l.substr(sp + 1);
      target = target.substr(0, target.find(' '));
      if (target.size() > limits_.max_target) {
        return fail(
            414, "request line: request-target longer than " + std::to_string(limits_.max_target) + " bytes");
      }
    }
    return fail(431,
                "request line: longer than the head limit of " + std::to_string(limits_.max_head) + " bytes");
  }
  return fail(431, "head: longer than " + std::to_string(limits_.max_head) + " bytes (at " + context() + ")");
}

bool HttpRequestHeadParser::on_line(std::string_view line) {
  const size_t raw = line.size() + 1;
  // A line ends with CRLF; a bare LF is accepted as a line end too (RFC 9112 §2.2 MAY).
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (const size_t i = first_bad_byte(line, 0, true); i != kNpos) {
    return fail(400, context() + ": " + bad_byte_why(line, i));
  }
  if (state_ == State::RequestLine) {
    if (line.empty()) {  // RFC 9112 §2.2: empty lines before the request line are ignored
      if (++empty_lines_ > kMaxEmptyLinesBefore) {
        return fail(400, "request line: more than " + std::to_string(kMaxEmptyLinesBefore) +
                             " empty lines before it");
      }
      return true;
    }
    head_bytes_ += raw;
    return on_request_line(line);
  }
  head_bytes_ += raw;
  if (line.empty()) return finish_head();
  return on_field_line(line);
}

// RFC 9112 §3: request-line = method SP request-target SP HTTP-version, single SPs.
bool HttpRequestHeadParser::on_request_line(std::string_view line) {
  const size_t sp1 = line.find(' ');
  if (sp1 == kNpos) {
    return fail(400,
                "request line: expected 'method SP request-target SP HTTP-version', got " + quoted(line));
  }
  const std::string_view method = line.substr(0, sp1);
  if (method.empty()) return fail(400, "request line: empty method (it starts with SP)");
  if (!is_token(method)) return fail(400, "request line: method " + quoted(method) + " is not a token");
  const std::string_view rest = line.substr(sp1 + 1);
  const size_t sp2 = rest.find(' ');
  if (sp2 == kNpos) return fail(400, "request line: expected SP HTTP-version after the request-target");
  const std::string_view target = rest.substr(0, sp2);
  const std::string_view version = rest.substr(sp2 + 1);
  if (target.empty()) return fail(400, "request line: empty request-target (two SPs after the method)");
  if (target.size() > limits_.max_target) {
    return fail(414, "request line: request-target of " + std::to_string(target.size()) + " bytes, over " +
                         std::to_string(limits_.max_target));
  }
  for (size_t i = 0; i < target.size(); ++i) {
    const auto c = static_cast<unsigned char>(target[i]);
    if (c < 0x21 || c > 0x7e) {
      return fail(400,
                  "request line: byte " + hex_byte(c) + " in the request-target (visible ASCII expected)");
    }
  }
  // RFC 9112 §2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT; a server answers 505 to a major
  // version it does not support.
  if (version == "HTTP/1.1") {
    head_.version = HttpVersion::Http11;
  } else if (version == "HTTP/1.0") {
    head_.version = HttpVersion::Http10;
  } else if (version.size() == 8 && version.starts_with("HTTP/") && is_digit(version[5]) &&
             version[6] == '.' && is_digit(version[7])) {
    return fail(505, "request line: HTTP-version " + quoted(version) + " not supported");
  } else {
    return fail(400, "request line: " + quoted(version) + " is not an HTTP-version");
  }
  head_.method.assign(method);
  head_.target.assign(target);
  state_ = State::Fields;
  return true;
}

bool HttpRequestHeadParser::on_field_line(std::string_view line) {
  if (head_.headers.size() >= limits_.max_headers) {
    return fail(431, context() + ": more than " + std::to_string(limits_.max_headers) + " header fields");
  }
  std::string_view name, value;
  if (std::string why = field_line_error(line, name, value); !why.empty())
    return fail(400, context() + ": " + why);
  head_.headers.push_back({std::string(name), std::string(value)});
  return true;
}

// The framing and connection fields (RFC 9112 §6, §9.3), once every field is in.
bool HttpRequestHeadParser::finish_head() {
  HttpRequestHead& h = head_;
  bool transfer_encoding = false, close = false, keep_alive = false;
  size_t hosts = 0, chunked_count = 0;
  std::string_view unsupported;
  for (const auto& f : h.headers) {
    if (iequals(f.name, "Content-Length")) {
      // RFC 9112 §6.3 item 5: a list or repeated fields of one same value stand for that value.
      for (const std::string_view v : split_list(f.value)) {
        uint64_t n = 0;
        const Number r = parse_decimal(v, n);
        if (r == Number::NotNumber)
          return fail(400, "header 'Content-Length': " + quoted(v) + " is not a number");
        if (r == Number::TooLarge)
          return fail(400, "header 'Content-Length': " + quoted(v) + " is too large");
        if (h.content_length && *h.content_length != n) {
          return fail(400, "header 'Content-Length': values " + std::to_string(*h.content_length) + " and " +
                               std::to_string(n) + " disagree");
        }
        h.content_length = n;
      }
    } else if (iequals(f.name, "Transfer-Encoding")) {
      transfer_encoding = true;
      for (const std::string_view v : split_list(f.value)) {
        if (v.empty()) continue;  // RFC 9110 §5.6.1.2: empty list elements are ignored
        if (iequals(v, "chunked")) {
          ++chunked_count;
        } else if (unsupported.empty()) {
          const std::string_view name = trim_ows(v.substr(0, v.find(';')));
          if (!is_token(name))
            return fail(400, "header 'Transfer-Encoding': " + quoted(v) + " is not a coding");
          unsupported = v;
        }
      }
    } else if (iequals(f.name, "Connection")) {
      for (const std::string_view v : split_list(f.value)) {
        if (iequals(v, "close")) close = true;
        if (iequals(v, "keep-alive")) keep_alive = true;
      }
    } else if (iequals(f.name, "Expect")) {
      // RFC 9110 §10.1.1: a 100-continue expectation in an HTTP/1.0 request MUST be ignored.
      if (iequals(f.value, "100-continue") && h.version == HttpVersion::Http11) h.expect_continue = true;
    } else if (iequals(f.name, "Host")) {
      // RFC 9112 §3.2: a request with more than one Host field MUST be answered 400.
      if (++hosts > 1) return fail(400, "header 'Host': more than one Host field");
      h.has_host = true;
    }
  }
  if (transfer_encoding) {
    if (h.version == HttpVersion::Http10) {
      // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
      return fail(400, "header 'Transfer-Encoding': not allowed in an HTTP/1.0 request");
    }
    if (h.content_length) {
      // RFC 9112 §6.1: a server MAY reject a request with both; we do (request smuggling).
      return fail(400, "header 'Transfer-Encoding': sent with Content-Length");
    }
    // RFC 9112 §6.1: a server SHOULD answer 501 to a transfer coding it does not understand.
    if (!unsupported.empty()) {
      return fail(501,
                  "header 'Transfer-Encoding': transfer coding " + quoted(unsupported) + " not supported");
    }
    if (chunked_count == 0) return fail(400, "header 'Transfer-Encoding': no transfer coding");
    // RFC 9112 §6.1: chunked MUST NOT be applied more than once; only chunked codings remain here,
    // so it is also the final one (§6.3 item 4).
    if (chunked_count > 1) return fail(400, "header 'Transfer-Encoding': chunked more than once");
    h.chunked = true;
  }
  // RFC 9112 §9.3: HTTP/1.1 persists unless "close"; HTTP/1.0 only with "keep-alive".
  h.keep_alive = !close && (h.version == HttpVersion::Http11 || keep_alive);
  state_ = State::Complete;
  return true;
}

// ---- HttpChunkedDecoder -------------------------------------------------------------------------

HttpChunkedDecoder::HttpChunkedDecoder(size_t max_body) : max_body_(max_body) {}

void HttpChunkedDecoder::reset() {
  state_ = State::Size;
  line_.clear();
  remaining_ = 0;
  total_ = 0;
  trailer_bytes_ = 0;
  status_ = 0;
  why_.clear();
}

bool HttpChunkedDecoder::fail(int status, std::string why) {
  state_ = State::Error;
  status_ = status;
  why_ = std::move(why);
  line_.clear();
  return false;
}

HttpChunkedDecoder::Result HttpChunkedDecoder::feed(std::span<const uint8_t> in, size_t& consumed,
                                                    std::string& out) {
  consumed = 0;
  if (state_ == State::Done) return Result::Done;
  if (state_ == State::Error) return Result::Error;
  size_t pos = 0;
  while (pos < in.size()) {
    switch (state_) {
      case State::Size:
      case State::Trailer: {
        const bool size_line = state_ == State::Size;
        std::string_view line;
        const LineStep step =
            next_line(in, pos, size_line ? kMaxChunkSizeLine : kMaxTrailer - trailer_bytes_, line_, line);
        consumed = pos;
        if (step == LineStep::Partial) break;
        if (step == LineStep::TooLong) {
          fail(400, size_line
                        ? "chunk size line: longer than " + std::to_string(kMaxChunkSizeLine) + " bytes"
                        : "chunked trailer section: longer than " + std::to_string(kMaxTrailer) + " bytes");
          return Result::Error;
        }
        if (!size_line) trailer_bytes_ += line.size() + 1;
        const bool ok = size_line ? on_size_line(line) : on_trailer_line(line);
        line_.clear();
        if (!ok) return Result::Error;
        if (state_ == State::Done) return Result::Done;
        break;
      }
      case State::Data: {
        const auto n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size() - pos));
        out.append(reinterpret_cast<const char*>(in.data() + pos), n);
        pos += n;
        remaining_ -= n;
        total_ += n;
        if (remaining_ == 0) state_ = State::DataCr;
        break;
      }
      case State::DataCr:
      case State::DataLf: {
        // RFC 9112 §7.1: chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
        const char want = state_ == State::DataCr ? '\r' : '\n';
        if (in[pos] != want) {
          consumed = pos;
          fail(400, "chunk data: expected CRLF after the chunk's data, got byte " + hex_byte(in[pos]));
          return Result::Error;
        }
        ++pos;
        state_ = state_ == State::DataCr ? State::DataLf : State::Size;
        break;
      }
      case State::Done:
      case State::Error:
        break;  // returned above
    }
  }
  consumed = pos;
  return Result::NeedMore;
}

// RFC 9112 §7.1: chunk-size = 1*HEXDIG, then chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS
// ext-val ] ), ignored; then CRLF.
bool HttpChunkedDecoder::on_size_line(std::string_view line) {
  if (line.empty() || line.back() != '\r') return fail(400, "chunk size line: must end with CRLF");
  line.remove_suffix(1);
  if (const size_t i = first_bad_byte(line, 0, true); i != kNpos) {
    return fail(400, "chunk size line: " + bad_byte_why(line, i));
  }
  size_t digits = 0;
  uint64_t size = 0;
  while (digits < line.size() && hex_value(line[digits]) >= 0) {
    if (++digits > kMaxChunkSizeDigits) {
      return fail(400, "chunk size: more than " + std::to_string(kMaxChunkSizeDigits) + " hex digits");
    }
    size = size << 4 | static_cast<uint64_t>(hex_value(line[digits - 1]));
  }
  if (digits == 0) return fail(400, "chunk size: " + quoted(line) + " is not a hexadecimal size");
  const std::string_view ext = line.substr(digits);
  const std::string_view after_bws = trim_ows(ext);
  if (!ext.empty() && (after_bws.empty() || after_bws.front() != ';')) {
    return fail(400, "chunk size line: expected ';' or CRLF after the size, got " + quoted(ext));
  }
  if (size == 0) {  // last-chunk: trailer fields then CRLF follow
    state_ = State::Trailer;
    return true;
  }
  if (size > max_body_ - total_) {
    return fail(413, "chunked body: a chunk of " + std::to_string(size) + " bytes after " +
                         std::to_string(total_) + " takes it over the limit of " + std::to_string(max_body_) +
                         " bytes");
  }
  remaining_ = size;
  state_ = State::Data;
  return true;
}

// RFC 9112 §7.1.2: trailer-section = *( field-line CRLF ), then CRLF; the fields are dropped.
bool HttpChunkedDecoder::on_trailer_line(std::string_view line) {
  if (line.empty() || line.back() != '\r') return fail(400, "chunked trailer: lines must end with CRLF");
  line.remove_suffix(1);
  if (line.empty()) {
    state_ = State::Done;
    return true;
  }
  if (const size_t i = first_bad_byte(line, 0, true); i != kNpos) {
    return fail(400, "chunked trailer: " + bad_byte_why(line, i));
  }
  std::string_view name, value;
  if (std::string why = field_line_error(line, name, value); !why.empty()) {
    return fail(400, "chunked trailer: " + why);
  }
  return true;
}

}  // namespace rill::protocol
