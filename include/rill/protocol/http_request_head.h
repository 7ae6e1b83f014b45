#pragma once
// HTTP/1.1 requests as bytes (RFC 9112), pure: no sockets, no clock; what the server's HTTP
// connection (http/http_connection.h) parses requests with:
//
//   HttpRequestHeadParser  the request line and header fields up to the blank line, fed in any
//                          pieces; framing (Content-Length, Transfer-Encoding: chunked) and
//                          connection (keep-alive, Expect: 100-continue) derived from the fields;
//                          a refused head carries the status to answer (400, 414, 431, 501, 505)
//                          and a one-line reason.
//   HttpRequestHead        what it gives: the method, target and fields as views into the head's
//                          own copy of its bytes (one allocation per request, no string per field).
//   HttpChunkedDecoder     a chunked request body (RFC 9112 §7.1) into plain bytes, bounded.
//
// Both give the same answer whatever way their input is split (byte by byte or all at once), stop
// exactly at the end of what they parse (pipelined bytes are left to the caller), buffer at most
// one bounded head, and stay in Error until reset().
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rill::protocol {

enum class HttpVersion : uint8_t { Http10, Http11 };

struct HttpHeaderField {
  std::string_view name;   // as received
  std::string_view value;  // leading and trailing OWS removed
};

// A parsed request head. method, target and the fields view one block the head owns: the head's
// bytes as received (request line to blank line) behind the field table. They stay valid as long
// as the head lives, through moves (the block moves with it); a copy gets its own block and views
// into it. What must outlive the head (an exchange held past its request) is copied out.
class HttpRequestHead {
 public:
  std::string_view method;  // the token as sent ("GET")
  std::string_view target;  // request-target as sent (raw; routing and percent-decoding happen elsewhere)
  HttpVersion version = HttpVersion::Http11;
  std::span<const HttpHeaderField> headers;  // in the order received
  // Framing and connection, derived from the headers (RFC 9112 §6, §9.3):
  std::optional<uint64_t> content_length;
  bool chunked = false;          // Transfer-Encoding: chunked (the final and only coding)
  bool keep_alive = true;        // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with keep-alive
  bool expect_continue = false;  // "Expect: 100-continue" (HTTP/1.1 only: RFC 9110 §10.1.1)
  bool has_host = false;         // a missing Host is the server's decision, not the parser's

  HttpRequestHead() = default;
  HttpRequestHead(const HttpRequestHead& other);
  HttpRequestHead& operator=(const HttpRequestHead& other);
  // A moved-from head still views the block it gave away: assign it or let it go.
  HttpRequestHead(HttpRequestHead&&) noexcept = default;
  HttpRequestHead& operator=(HttpRequestHead&&) noexcept = default;

  // The value of the first field named `name` (compared case-insensitively), or nullptr; it
  // lives as long as the head.
  const std::string_view* find(std::string_view name) const;
  // The head's bytes as received, from the request line to the blank line (empty for a head
  // not made by the parser).
  std::string_view bytes() const { return {bytes_, size_}; }

 private:
  friend class HttpRequestHeadParser;
  // A block for `fields` fields and `size` bytes of head; returns the field table.
  HttpHeaderField* allocate(size_t fields, size_t size);

  std::unique_ptr<std::byte[]> block_;  // the field table, then the head's bytes
  size_t block_fields_ = 0;             // entries in the field table
  const char* bytes_ = nullptr;         // the head's bytes, in block_
  size_t size_ = 0;
};

struct HttpParseLimits {
  size_t max_head = 8192;    // request line + fields + blank line, line ends included: 431 beyond
  size_t max_target = 3072;  // request-target bytes: 414 beyond
  size_t max_headers = 100;  // header fields: 431 beyond
};

// Why a head was refused: the status to answer and a one-line reason naming what was expected
// ("request line: HTTP-version 'HTTP/2.0' not supported").
struct HttpHeadError {
  int status = 400;
  std::string why;
};

class HttpRequestHeadParser {
 public:
  explicit HttpRequestHeadParser(HttpParseLimits limits = {});

  enum class Result { NeedMore, Complete, Error };

  // Feeds bytes; consumes at most up to the end of one head (the blank line). `consumed` tells
  // how many bytes of `in` were used: all of them on NeedMore, up to right after the blank line
  // on Complete (the rest belongs to the body or the next pipelined request); on Error, the bytes
  // looked at, which depends on the split (a control byte is refused before its line ends). Once
  // Complete or Error, further calls consume nothing and repeat the result.
  Result feed(std::span<const uint8_t> in, size_t& consumed);

  const HttpRequestHead& head() const { return head_; }  // valid after Complete
  HttpRequestHead take();                                // moves the head out
  const HttpHeadError& error() const { return error_; }  // valid after Error
  void reset();                                          // ready for the next request on the connection

  // Bytes held for a line not yet ended; never more than limits.max_head.
  size_t buffered() const { return held_.empty() ? 0 : held_.size() - head_bytes_; }
  // No byte of a request seen since the last reset() (leading empty lines aside).
  bool idle() const { return state_ == State::RequestLine && held_.empty(); }

 private:
  enum class State : uint8_t { RequestLine, Fields, Complete, Error };
  struct Span {  // a piece of the head, by offset from its first byte
    uint32_t at = 0, size = 0;
  };
  struct FieldSpans {
    Span name, value;
    uint8_t framing = 0;  // which framing field it is (http_syntax::Framing), told once
  };

  bool parse_whole(std::span<const uint8_t> in, size_t& consumed);
  bool fail(int status, std::string why);
  bool check_partial_line(std::string_view line);
  bool on_line(std::string_view line, const char* head);
  bool on_request_line(std::string_view line, const char* head);
  bool request_line_error(std::string_view line);
  bool on_field_line(std::string_view line, const char* head);
  bool field_line_error(std::string_view line);
  bool too_many_fields();
  bool on_too_long(std::string_view line);
  bool build_head(const char* head);
  bool finish_head();
  bool content_length_field(std::string_view value);
  bool transfer_encoding_field(std::string_view value, std::string_view& unsupported, size_t& chunked_count);
  bool check_transfer_encoding(std::string_view unsupported, size_t chunked_count);
  std::string context() const;

  HttpParseLimits limits_;
  State state_ = State::RequestLine;
  HttpRequestHead head_;
  HttpHeadError error_;
  // Between feeds: the bytes of the head so far (lines ended, then the line not yet ended). A
  // head that arrives whole is parsed where it lies and copied once, into the head's block.
  std::string held_;
  size_t checked_ = 0;      // bytes of the line not yet ended already checked for control bytes
  size_t head_bytes_ = 0;   // bytes of the head in the lines already ended
  size_t empty_lines_ = 0;  // empty lines before the request line
  Span method_, target_;
  std::vector<FieldSpans> fields_;  // its capacity is kept from one request to the next
};

// Chunked request body (RFC 9112 §7.1): decodes incrementally into `out`, up to max_body bytes of
// data. Chunk extensions and trailer fields are checked and dropped. Line ends must be CRLF here
// (no bare LF: a framing disagreement inside a body is how requests get smuggled).
class HttpChunkedDecoder {
 public:
  explicit HttpChunkedDecoder(size_t max_body);

  enum class Result { NeedMore, Done, Error };

  // Appends the data of the chunks to `out`. `consumed`: all of `in` on NeedMore, up to right
  // after the final CRLF on Done; Done and Error repeat without consuming.
  Result feed(std::span<const uint8_t> in, size_t& consumed, std::string& out);

  const std::string& why() const { return why_; }  // after Error
  int status() const { return status_; }           // after Error: 413 over max_body, else 400; 0 before
  uint64_t body_size() const { return total_; }    // data bytes decoded so far
  void reset();

 private:
  enum class State : uint8_t { Size, Data, DataCr, DataLf, Trailer, Done, Error };

  bool parse_whole(std::span<const uint8_t> in, size_t& consumed);
  bool fail(int status, std::string why);
  bool on_size_line(std::string_view line);
  bool on_trailer_line(std::string_view line);

  size_t max_body_;
  State state_ = State::Size;
  std::string line_;
  uint64_t remaining_ = 0;  // data bytes left in the current chunk
  uint64_t total_ = 0;
  size_t trailer_bytes_ = 0;
  int status_ = 0;
  std::string why_;
};

}  // namespace rill::protocol
