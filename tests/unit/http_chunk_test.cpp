// protocol::http_chunk_size_line / http_chunk (RFC 9112 §7.1): exact bytes, and the writer's
// output read back by HttpChunkedDecoder (the two sides of the coding agree).
#include "rill/protocol/http_chunk.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rill/protocol/http_request_head.h"

namespace rill::protocol {
namespace {

std::span<const uint8_t> bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(HttpChunk, SizeLineIsLowercaseHexWithoutLeadingZeros) {
  EXPECT_EQ(http_chunk_size_line(0), "0\r\n");
  EXPECT_EQ(http_chunk_size_line(1), "1\r\n");
  EXPECT_EQ(http_chunk_size_line(0xf), "f\r\n");
  EXPECT_EQ(http_chunk_size_line(0x10), "10\r\n");
  EXPECT_EQ(http_chunk_size_line(300), "12c\r\n");
  EXPECT_EQ(http_chunk_size_line(0xabcdef), "abcdef\r\n");
  EXPECT_EQ(http_chunk_size_line(SIZE_MAX), std::string(2 * sizeof(size_t), 'f') + "\r\n");
}

TEST(HttpChunk, OneChunkPerPieceAndNothingForAnEmptyOne) {
  EXPECT_EQ(http_chunk(bytes("abc")), "3\r\nabc\r\n");
  EXPECT_EQ(http_chunk(bytes("")), "") << "an empty chunk would end the body";
  const std::string big(300, 'x');
  EXPECT_EQ(http_chunk(bytes(big)), "12c\r\n" + big + "\r\n");
}

TEST(HttpChunk, TheDecoderReadsBackWhatTheWriterFramed) {
  std::string body;
  std::string want;
  for (size_t n : {1u, 15u, 16u, 255u, 4096u, 70000u}) {
    const std::string piece(n, static_cast<char>('a' + n % 26));
    body += http_chunk(bytes(piece));
    want += piece;
  }
  body += kHttpLastChunk;
  HttpChunkedDecoder d(1 << 20);
  size_t used = 0;
  std::string out;
  EXPECT_EQ(d.feed(bytes(body), used, out), HttpChunkedDecoder::Result::Done);
  EXPECT_EQ(used, body.size());
  EXPECT_TRUE(out == want);
}

}  // namespace
}  // namespace rill::protocol
