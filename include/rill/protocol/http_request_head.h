#pragma once
// HTTP/1.1 requests as bytes (RFC 9112), pure: no sockets, no clock; what the server's HTTP
// connection (server/http_connection.h) parses requests with:
//
//   HttpRequestHeadParser  the request line and header fields up to the blank line, fed in any
//                          pieces; framing (Content-Length, Transfer-Encoding: chunked) and
//                          connection (keep-alive, Expect: 100-continue) derived from the fields;
//                          a refused head carries the status to answer (400, 414, 431, 501, 505)
//                          and a one-line reason.
//   HttpChunkedDecoder     a chunked request body (RFC 9112 §7.1) into plain bytes, bounded.
//
// Both give the same answer whatever way their input is split (byte by byte or all at once), stop
// exactly at the end of what they parse (pipelined bytes are left to the caller), buffer at most
// one bounded line, and stay in Error until reset().
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rill::protocol {

enum class HttpVersion : uint8_t { Http10, Http11 };

struct HttpHeaderField {
  std::string name;   // as received
  std::string value;  // leading and trailing OWS removed
};

struct HttpRequestHead {
  std::string method;  // the token as sent ("GET")
  std::string target;  // request-target as sent (raw; routing and percent-decoding happen elsewhere)
  HttpVersion version = HttpVersion::Http11;
  std::vector<HttpHeaderField> headers;  // in the order received
  // Framing and connection, derived from the headers (RFC 9112 §6, §9.3):
  std::optional<uint64_t> content_length;
  bool chunked = false;          // Transfer-Encoding: chunked (the final and only coding)
  bool keep_alive = true;        // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with keep-alive
  bool expect_continue = false;  // "Expect: 100-continue" (HTTP/1.1 only: RFC 9110 §10.1.1)
  bool has_host = false;         // a missing Host is the server's decision, not the parser's

  // The value of the first field named `name` (compared case-insensitively), or nullptr.
  const std::string* find(std::string_view name) const;
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
  size_t buffered() const { return line_.size(); }
  // No byte of a request seen since the last reset() (leading empty lines aside).
  bool idle() const { return state_ == State::RequestLine && line_.empty(); }

 private:
  enum class State : uint8_t { RequestLine, Fields, Complete, Error };

  bool fail(int status, std::string why);
  bool check_partial_line();
  bool on_line(std::string_view line);
  bool on_request_line(std::string_view line);
  bool on_field_line(std::string_view line);
  bool on_too_long();
  bool finish_head();
  std::string context() const;

  HttpParseLimits limits_;
  State state_ = State::RequestLine;
  HttpRequestHead head_;
  HttpHeadError error_;
  std::string line_;        // the current line, while it has not ended
  size_t checked_ = 0;      // bytes of line_ already checked for control bytes
  size_t head_bytes_ = 0;   // bytes of the head in the lines already ended
  size_t empty_lines_ = 0;  // empty lines before the request line
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
