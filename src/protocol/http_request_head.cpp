#include "rill/protocol/http_request_head.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "http_syntax.h"

namespace rill::protocol {

using namespace http_syntax;

namespace {

// RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request line.
constexpr size_t kMaxEmptyLinesBefore = 4;
constexpr uint64_t kMaxContentLength = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// Calls f(element) for each element of a comma-separated list (RFC 9110 §5.6.1), OWS trimmed,
// empty ones included, until f returns false; returns false then.
template <class F>
bool each_list_element(std::string_view v, F f) {
  for (;;) {
    const size_t comma = v.find(',');
    if (!f(trim_ows(v.substr(0, comma)))) return false;
    if (comma == kNpos) return true;
    v.remove_prefix(comma + 1);
  }
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

// The common request line, token SP 1*VCHAR SP "HTTP/1.1" or "HTTP/1.0" with the target within
// `max_target`, in one pass: the offsets of its two SPs and the version. False for anything else,
// which the checks one by one then refuse with their reason.
bool split_request_line(std::string_view line, size_t max_target, size_t& sp1, size_t& sp2,
                        HttpVersion& version) {
  const char* begin = line.data();
  const char* end = begin + line.size();
  const char* p = skip_class(begin, end, kTchar);
  if (p == begin || p == end || *p != ' ') return false;
  sp1 = static_cast<size_t>(p - begin);
  p = skip_class(p + 1, end, kVisible);
  sp2 = static_cast<size_t>(p - begin);
  if (sp2 == sp1 + 1 || sp2 - sp1 - 1 > max_target || p == end || *p != ' ') return false;
  const std::string_view v = line.substr(sp2 + 1);
  if (v == "HTTP/1.1") {
    version = HttpVersion::Http11;
  } else if (v == "HTTP/1.0") {
    version = HttpVersion::Http10;
  } else {
    return false;
  }
  return true;
}

// The common field line, a token, ':', then a value, without control bytes. False for anything
// else, which the checks one by one then refuse with their reason.
bool split_field_line(std::string_view line, std::string_view& name, std::string_view& value) {
  const char* begin = line.data();
  const char* end = begin + line.size();
  const char* colon = skip_class(begin, end, kTchar);
  if (colon == begin || colon == end || *colon != ':') return false;
  if (!is_clean_line(line, static_cast<size_t>(colon - begin))) return false;  // the name is made of tchars
  name = std::string_view(begin, static_cast<size_t>(colon - begin));
  value = trim_ows(std::string_view(colon + 1, static_cast<size_t>(end - colon - 1)));
  return true;
}

}  // namespace

// ---- HttpRequestHead ----------------------------------------------------------------------------

HttpRequestHead::HttpRequestHead(const HttpRequestHead& o)
    : method(o.method),
      target(o.target),
      version(o.version),
      headers(o.headers),
      content_length(o.content_length),
      chunked(o.chunked),
      keep_alive(o.keep_alive),
      expect_continue(o.expect_continue),
      has_host(o.has_host) {
  if (!o.block_) return;
  HttpHeaderField* table = allocate(o.block_fields_, o.size_);
  const size_t block_size = o.block_fields_ * sizeof(HttpHeaderField) + o.size_;
  std::memcpy(block_.get(), o.block_.get(), block_size);
  // Every view into o's block now views the same place in this one.
  const auto from = reinterpret_cast<uintptr_t>(o.block_.get());
  const auto moved = [&](std::string_view v) {
    const auto at = reinterpret_cast<uintptr_t>(v.data());
    if (at < from || at > from + block_size) return v;
    return std::string_view(reinterpret_cast<const char*>(block_.get()) + (at - from), v.size());
  };
  method = moved(method);
  target = moved(target);
  for (size_t i = 0; i < block_fields_; ++i) table[i] = {moved(table[i].name), moved(table[i].value)};
  const auto fields = reinterpret_cast<uintptr_t>(o.headers.data());
  if (fields >= from && fields < from + block_size)
    headers = {table + (fields - from) / sizeof(HttpHeaderField), o.headers.size()};
}

HttpRequestHead& HttpRequestHead::operator=(const HttpRequestHead& o) {
  if (this != &o) *this = HttpRequestHead(o);
  return *this;
}

HttpHeaderField* HttpRequestHead::allocate(size_t fields, size_t size) {
  const size_t table = fields * sizeof(HttpHeaderField);
  block_ = std::make_unique_for_overwrite<std::byte[]>(table + size);
  block_fields_ = fields;
  bytes_ = reinterpret_cast<const char*>(block_.get() + table);
  size_ = size;
  return reinterpret_cast<HttpHeaderField*>(block_.get());
}

const std::string_view* HttpRequestHead::find(std::string_view name) const {
  // Clients send the usual spelling ("User-Agent", "Origin"): one compare of the bytes finds it
  // before the case-insensitive loop runs.
  for (const auto& f : headers) {
    if (f.name.size() != name.size()) continue;
    if (std::memcmp(f.name.data(), name.data(), name.size()) == 0 || iequals(f.name, name)) return &f.value;
  }
  return nullptr;
}

// ---- HttpRequestHeadParser ----------------------------------------------------------------------

HttpRequestHeadParser::HttpRequestHeadParser(HttpParseLimits limits) : limits_(limits) {}

void HttpRequestHeadParser::reset() {
  state_ = State::RequestLine;
  head_ = HttpRequestHead();
  error_ = HttpHeadError();
  held_.clear();
  checked_ = 0;
  head_bytes_ = 0;
  empty_lines_ = 0;
  method_ = target_ = {};
  fields_.clear();
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
  held_.clear();
  return false;
}

std::string HttpRequestHeadParser::context() const {
  if (state_ == State::RequestLine) return "request line";
  return "header field " + std::to_string(fields_.size() + 1);
}

HttpRequestHeadParser::Result HttpRequestHeadParser::feed(std::span<const uint8_t> in, size_t& consumed) {
  consumed = 0;
  if (state_ == State::Complete) return Result::Complete;
  if (state_ == State::Error) return Result::Error;
  // A head that arrives whole (most do, in one read) goes through in one pass.
  if (state_ == State::RequestLine && held_.empty() && parse_whole(in, consumed))
    return state_ == State::Complete ? Result::Complete : Result::Error;
  const auto* data = reinterpret_cast<const char*>(in.data());
  size_t pos = 0;
  size_t begin = 0;  // where the head starts in `in`, while held_ holds none of it
  while (pos < in.size()) {
    // head_bytes_ never passes max_head: every line ended so far fitted in what was left.
    const size_t max_line = limits_.max_head - head_bytes_;  // this line's bytes, its LF included
    const char* start = data + pos;
    const size_t n = std::min(in.size() - pos, max_line - buffered());
    const auto* lf = static_cast<const char*>(n == 0 ? nullptr : std::memchr(start, '\n', n));
    if (lf == nullptr) {  // the bytes all go to the line not yet ended
      pos += n;
      consumed = pos;
      if (held_.empty()) {
        held_.assign(data + begin, pos - begin);
      } else {
        held_.append(start, n);
      }
      const std::string_view line = std::string_view(held_).substr(head_bytes_);
      if (line.size() < max_line) return check_partial_line(line) ? Result::NeedMore : Result::Error;
      if (check_partial_line(line)) on_too_long(line);  // the same bytes whatever the split
      return Result::Error;
    }
    const auto len = static_cast<size_t>(lf - start);
    pos += len + 1;
    consumed = pos;
    bool ok;
    if (held_.empty()) {  // the whole head so far is in `in`: parsed where it lies
      ok = on_line(std::string_view(start, len), data + begin);
    } else {
      held_.append(start, len + 1);
      ok = on_line(std::string_view(held_).substr(head_bytes_, held_.size() - head_bytes_ - 1), held_.data());
    }
    checked_ = 0;
    if (!ok) return Result::Error;
    if (state_ == State::Complete) {
      held_.clear();
      return Result::Complete;
    }
    if (state_ == State::RequestLine) {  // an empty line before the request line, dropped
      held_.clear();
      begin = pos;
    }
  }
  // Every byte taken, the last line ended: the head so far waits in held_ for the next bytes.
  if (held_.empty()) held_.assign(data + begin, pos - begin);
  return Result::NeedMore;
}

// The common head, whole in `in`: the request line and field lines as split_request_line and
// split_field_line take them, a blank line, every line within the limits. It is parsed in one
// pass over its bytes — no line found first and looked at again, a field value checked for
// control bytes eight at a time while its end is sought — and finished as the line-by-line parse
// finishes it (build_head, finish_head: the same head, or the same refusal). Anything else (a
// head not all there, an empty line before it, a byte or a line that parse refuses, a limit
// reached) returns false having changed nothing; the line-by-line parse then takes the same
// bytes, so the result does not depend on which of the two parsed them.
bool HttpRequestHeadParser::parse_whole(std::span<const uint8_t> in, size_t& consumed) {
  const char* const head = reinterpret_cast<const char*>(in.data());
  const char* const end = head + std::min(in.size(), limits_.max_head);
  const auto span = [head](const char* from, const char* to) {
    return Span{static_cast<uint32_t>(from - head), static_cast<uint32_t>(to - from)};
  };
  // request-line = method SP request-target SP HTTP-version CRLF (or a bare LF)
  const char* p = skip_class(head, end, kTchar);
  if (p == head || p == end || *p != ' ') return false;
  const char* const target = p + 1;
  const char* const method_end = p;
  p = skip_class(target, end, kVisible);
  const auto target_size = static_cast<size_t>(p - target);
  // " HTTP/1.x" and at least the LF
  if (target_size == 0 || target_size > limits_.max_target || end - p < 10 || *p != ' ' ||
      std::memcmp(p + 1, "HTTP/1.", 7) != 0 || (p[8] != '0' && p[8] != '1'))
    return false;
  const HttpVersion version = p[8] == '1' ? HttpVersion::Http11 : HttpVersion::Http10;
  p += 9;
  if (*p == '\r' && ++p == end) return false;
  if (*p++ != '\n') return false;
  const auto give_up = [this] {
    fields_.clear();
    return false;
  };
  for (;;) {
    if (p == end) return give_up();
    if (*p == '\r' || *p == '\n') {  // the blank line
      if (*p == '\r' && (++p == end || *p != '\n')) return give_up();
      ++p;
      break;
    }
    const char* const name = p;
    p = skip_class(p, end, kTchar);
    if (p == name || p == end || *p != ':') return give_up();
    const char* const colon = p;
    const char* line_end = find_control(colon + 1, end);
    while (line_end != end && *line_end == '\t') line_end = find_control(line_end + 1, end);
    if (line_end == end) return give_up();
    p = line_end;
    if (*p == '\r' && ++p == end) return give_up();
    if (*p++ != '\n' || fields_.size() >= limits_.max_headers) return give_up();
    const std::string_view value =
        trim_ows(std::string_view(colon + 1, static_cast<size_t>(line_end - colon - 1)));
    const std::string_view name_view(name, static_cast<size_t>(colon - name));
    fields_.push_back({span(name, colon), span(value.data(), value.data() + value.size()),
                       static_cast<uint8_t>(framing_field(name_view))});
  }
  head_.version = version;
  method_ = span(head, method_end);
  target_ = span(target, target + target_size);
  head_bytes_ = static_cast<size_t>(p - head);
  consumed = head_bytes_;
  build_head(head);
  finish_head();
  return true;
}

// Refuses control bytes while a line is still arriving, so that a client speaking something else
// (a TLS ClientHello, binary junk) hears 400 at once; the same bytes give the same reason when the
// line arrives whole, since the checks of a whole line look for them first.
bool HttpRequestHeadParser::check_partial_line(std::string_view line) {
  const size_t i = first_bad_byte(line, checked_, false);
  if (i != kNpos) return fail(400, context() + ": " + bad_byte_why(line, i));
  checked_ = line.empty() || line.back() != '\r' ? line.size() : line.size() - 1;
  return true;
}

bool HttpRequestHeadParser::on_too_long(std::string_view line) {
  if (state_ == State::RequestLine) {
    // The request line alone fills the head: 414 when it is the target that is too long.
    const size_t sp = line.find(' ');
    if (sp != kNpos) {
      std::string_view target = line.substr(sp + 1);
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

// A line that ended, without its LF; `head` is where the head's first byte lies (the line is
// among the bytes that follow it).
bool HttpRequestHeadParser::on_line(std::string_view line, const char* head) {
  const size_t raw = line.size() + 1;
  // A line ends with CRLF; a bare LF is accepted as a line end too (RFC 9112 §2.2 MAY).
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (state_ == State::RequestLine) {
    if (line.empty()) {  // RFC 9112 §2.2: empty lines before the request line are ignored
      if (++empty_lines_ > kMaxEmptyLinesBefore) {
        return fail(400, "request line: more than " + std::to_string(kMaxEmptyLinesBefore) +
                             " empty lines before it");
      }
      return true;
    }
    head_bytes_ += raw;
    return on_request_line(line, head);
  }
  head_bytes_ += raw;
  if (line.empty()) return build_head(head) && finish_head();
  return on_field_line(line, head);
}

// RFC 9112 §3: request-line = method SP request-target SP HTTP-version, single SPs.
bool HttpRequestHeadParser::on_request_line(std::string_view line, const char* head) {
  size_t sp1 = 0, sp2 = 0;
  HttpVersion version = HttpVersion::Http11;
  if (!split_request_line(line, limits_.max_target, sp1, sp2, version)) return request_line_error(line);
  const auto at = static_cast<uint32_t>(line.data() - head);
  head_.version = version;
  method_ = {at, static_cast<uint32_t>(sp1)};
  target_ = {static_cast<uint32_t>(at + sp1 + 1), static_cast<uint32_t>(sp2 - sp1 - 1)};
  state_ = State::Fields;
  return true;
}

// A request line that is not the common one, looked at one rule at a time: fails with the first
// broken rule's reason.
bool HttpRequestHeadParser::request_line_error(std::string_view line) {
  if (const size_t i = first_bad_byte(line, 0, true); i != kNpos) {
    return fail(400, context() + ": " + bad_byte_why(line, i));
  }
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
  for (const char ch : target) {
    if ((byte_class(ch) & kVisible) == 0) {
      return fail(400, "request line: byte " + hex_byte(static_cast<unsigned char>(ch)) +
                           " in the request-target (visible ASCII expected)");
    }
  }
  // RFC 9112 §2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT; a server answers 505 to a major
  // version it does not support.
  if (version.size() == 8 && version.starts_with("HTTP/") && is_digit(version[5]) && version[6] == '.' &&
      is_digit(version[7])) {
    return fail(505, "request line: HTTP-version " + quoted(version) + " not supported");
  }
  return fail(400, "request line: " + quoted(version) + " is not an HTTP-version");
}

bool HttpRequestHeadParser::on_field_line(std::string_view line, const char* head) {
  std::string_view name, value;
  if (!split_field_line(line, name, value)) return field_line_error(line);
  if (fields_.size() >= limits_.max_headers) return too_many_fields();
  const auto span = [head](std::string_view v) {
    return Span{static_cast<uint32_t>(v.data() - head), static_cast<uint32_t>(v.size())};
  };
  fields_.push_back({span(name), span(value), static_cast<uint8_t>(framing_field(name))});
  return true;
}

// A field line that is not the common one, looked at one rule at a time, in the order that picks
// the reason: control bytes, the field count, then the line's form. Such a line breaks one.
bool HttpRequestHeadParser::field_line_error(std::string_view line) {
  if (const size_t i = first_bad_byte(line, 0, true); i != kNpos) {
    return fail(400, context() + ": " + bad_byte_why(line, i));
  }
  if (fields_.size() >= limits_.max_headers) return too_many_fields();
  std::string_view name, value;
  std::string why = http_syntax::field_line_error(line, name, value);
  return fail(400, context() + ": " + (why.empty() ? "malformed" : why));
}

bool HttpRequestHeadParser::too_many_fields() {
  return fail(431, context() + ": more than " + std::to_string(limits_.max_headers) + " header fields");
}

// The blank line arrived: the head's bytes (head_bytes_ from `head`) are copied once into the
// head's block, and its views made.
bool HttpRequestHeadParser::build_head(const char* head) {
  HttpRequestHead& h = head_;
  HttpHeaderField* table = h.allocate(fields_.size(), head_bytes_);
  char* bytes = reinterpret_cast<char*>(table + fields_.size());
  std::memcpy(bytes, head, head_bytes_);
  const auto view = [bytes](Span s) { return std::string_view(bytes + s.at, s.size); };
  h.method = view(method_);
  h.target = view(target_);
  for (size_t i = 0; i < fields_.size(); ++i) {
    std::construct_at(table + i, HttpHeaderField{view(fields_[i].name), view(fields_[i].value)});
  }
  h.headers = {table, fields_.size()};
  return true;
}

// The framing and connection fields (RFC 9112 §6, §9.3), once every field is in.
bool HttpRequestHeadParser::finish_head() {
  HttpRequestHead& h = head_;
  bool transfer_encoding = false, close = false, keep_alive = false;
  size_t hosts = 0, chunked_count = 0;
  std::string_view unsupported;
  for (size_t i = 0; i < fields_.size(); ++i) {
    const auto kind = static_cast<Framing>(fields_[i].framing);
    if (kind == Framing::Other) continue;
    const HttpHeaderField& f = h.headers[i];
    switch (kind) {
      case Framing::ContentLength:
        if (!content_length_field(f.value)) return false;
        break;
      case Framing::TransferEncoding:
        transfer_encoding = true;
        if (!transfer_encoding_field(f.value, unsupported, chunked_count)) return false;
        break;
      case Framing::Connection:
        each_list_element(f.value, [&](std::string_view v) {
          close = close || iequals(v, "close");
          keep_alive = keep_alive || iequals(v, "keep-alive");
          return true;
        });
        break;
      case Framing::Expect:
        // RFC 9110 §10.1.1: a 100-continue expectation in an HTTP/1.0 request MUST be ignored.
        if (iequals(f.value, "100-continue") && h.version == HttpVersion::Http11) h.expect_continue = true;
        break;
      case Framing::Host:
        // RFC 9112 §3.2: a request with more than one Host field MUST be answered 400.
        if (++hosts > 1) return fail(400, "header 'Host': more than one Host field");
        h.has_host = true;
        break;
      case Framing::Other:
        break;
    }
  }
  if (transfer_encoding && !check_transfer_encoding(unsupported, chunked_count)) return false;
  // RFC 9112 §9.3: HTTP/1.1 persists unless "close"; HTTP/1.0 only with "keep-alive".
  h.keep_alive = !close && (h.version == HttpVersion::Http11 || keep_alive);
  state_ = State::Complete;
  return true;
}

// RFC 9112 §6.3 item 5: a list or repeated fields of one same value stand for that value.
bool HttpRequestHeadParser::content_length_field(std::string_view value) {
  std::optional<uint64_t>& length = head_.content_length;
  return each_list_element(value, [&](std::string_view v) {
    uint64_t n = 0;
    const Number r = parse_decimal(v, n);
    if (r == Number::NotNumber)
      return fail(400, "header 'Content-Length': " + quoted(v) + " is not a number");
    if (r == Number::TooLarge) return fail(400, "header 'Content-Length': " + quoted(v) + " is too large");
    if (length && *length != n) {
      return fail(400, "header 'Content-Length': values " + std::to_string(*length) + " and " +
                           std::to_string(n) + " disagree");
    }
    length = n;
    return true;
  });
}

// The codings of one Transfer-Encoding field: chunked counted, the first other one kept.
bool HttpRequestHeadParser::transfer_encoding_field(std::string_view value, std::string_view& unsupported,
                                                    size_t& chunked_count) {
  return each_list_element(value, [&](std::string_view v) {
    if (v.empty()) return true;  // RFC 9110 §5.6.1.2: empty list elements are ignored
    if (iequals(v, "chunked")) {
      ++chunked_count;
    } else if (unsupported.empty()) {
      if (!is_token(trim_ows(v.substr(0, v.find(';')))))
        return fail(400, "header 'Transfer-Encoding': " + quoted(v) + " is not a coding");
      unsupported = v;
    }
    return true;
  });
}

// A request with Transfer-Encoding (RFC 9112 §6.1): chunked, once, as the only coding.
bool HttpRequestHeadParser::check_transfer_encoding(std::string_view unsupported, size_t chunked_count) {
  HttpRequestHead& h = head_;
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
    return fail(501, "header 'Transfer-Encoding': transfer coding " + quoted(unsupported) + " not supported");
  }
  if (chunked_count == 0) return fail(400, "header 'Transfer-Encoding': no transfer coding");
  // RFC 9112 §6.1: chunked MUST NOT be applied more than once; only chunked codings remain here,
  // so it is also the final one (§6.3 item 4).
  if (chunked_count > 1) return fail(400, "header 'Transfer-Encoding': chunked more than once");
  h.chunked = true;
  return true;
}

}  // namespace rill::protocol
