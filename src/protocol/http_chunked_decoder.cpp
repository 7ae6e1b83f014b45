// HttpChunkedDecoder (declared in http_request_head.h): a chunked request body, RFC 9112 §7.1.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "http_syntax.h"
#include "rill/protocol/http_request_head.h"
#include "rill/protocol/percent_coding.h"

namespace rill::protocol {

using namespace http_syntax;

namespace {

constexpr size_t kMaxChunkSizeLine = 1024;  // with its CRLF
constexpr size_t kMaxTrailer = 8192;        // every trailer line and the final CRLF
constexpr size_t kMaxChunkSizeDigits = 16;  // 16 hex digits fill a uint64_t: no overflow past this


}  // namespace

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
  while (digits < line.size() && hex_digit_value(line[digits]) >= 0) {
    if (++digits > kMaxChunkSizeDigits) {
      return fail(400, "chunk size: more than " + std::to_string(kMaxChunkSizeDigits) + " hex digits");
    }
    size = size << 4 | static_cast<uint64_t>(hex_digit_value(line[digits - 1]));
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
