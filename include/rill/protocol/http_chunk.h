#pragma once
// The writing side of HTTP/1.1 chunked transfer coding (RFC 9112 §7.1):
//   chunk      = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//   chunk-size = 1*HEXDIG
//   last-chunk = 1*("0") [ chunk-ext ] CRLF, then the (empty) trailer section and CRLF
// A streamed body (HTTP-FLV) frames each piece as one chunk; HttpChunkedDecoder
// (http_request_head.h) is the reading side.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace rill::protocol {

// "<hex size>\r\n", lowercase, no extensions. Zero is the last-chunk's line: a data chunk is
// never empty (a zero-size chunk would end the body).
std::string http_chunk_size_line(size_t size);

// The whole chunk: size line, data, CRLF. Empty data gives an empty string (nothing to send).
std::string http_chunk(std::span<const uint8_t> data);

// The end of a chunked body without trailers.
inline constexpr std::string_view kHttpLastChunk = "0\r\n\r\n";

}  // namespace rill::protocol
