// render_response_head / ResponseHeaders: the exact bytes of a response head.
#include <gtest/gtest.h>

#include <string>

#include "rill/http/http_exchange.h"

namespace rill::http {
namespace {

std::string text(const BufferRef& b) {
  return std::string(reinterpret_cast<const char*>(b->data()), b->size());
}

TEST(ResponseHead, StatusCommonHandlerHeadersThenFraming) {
  const std::string common = "Server: rill/test\r\nDate: Thu, 03 Dec 2026 16:00:00 GMT\r\n";
  ResponseHeaders h;
  h.add("Content-Type", "application/vnd.apple.mpegurl");
  h.add("Cache-Control", "max-age=1");
  h.add("Access-Control-Expose-Headers", "Content-Length, Content-Type, Server");
  ResponseHeadParts p;
  p.common = &common;
  p.headers = &h;
  p.content_length = 161;
  const BufferRef head = render_response_head(p);
  EXPECT_EQ(text(head),
            "HTTP/1.1 200 OK\r\n"
            "Server: rill/test\r\nDate: Thu, 03 Dec 2026 16:00:00 GMT\r\n"
            "Content-Type: application/vnd.apple.mpegurl\r\n"
            "Cache-Control: max-age=1\r\n"
            "Access-Control-Expose-Headers: Content-Length, Content-Type, Server\r\n"
            "Content-Length: 161\r\n"
            "\r\n");
  EXPECT_EQ(head->size(), head->capacity());  // one buffer of the exact size
}

TEST(ResponseHead, FramingHeadersOfAHandlerAreLeftOutAndATypeIsDefaulted) {
  ResponseHeaders h;
  h.add("content-length", "5");  // the connection writes these: a handler's are dropped
  h.add("Connection", "keep-alive");
  h.add("Transfer-Encoding", "gzip");
  h.add("X-Kept", "yes");
  EXPECT_EQ(h.lines(), "X-Kept: yes\r\n");
  EXPECT_FALSE(h.has_content_type());
  ResponseHeadParts p;
  p.headers = &h;
  p.status = 404;
  p.content_length = 10;
  p.close = true;
  EXPECT_EQ(text(render_response_head(p)),
            "HTTP/1.1 404 Not Found\r\nX-Kept: yes\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: 10\r\nConnection: close\r\n\r\n");
  ResponseHeaders typed;
  typed.add("content-type", "video/mp2t");  // names compare without case
  EXPECT_TRUE(typed.has_content_type());
}

// The lines stay in the object while they fit and move to the heap past that, in order, whatever
// mix of add() and add_lines() brought them.
TEST(ResponseHead, HeaderLinesKeepTheirOrderPastTheInlineRoom) {
  ResponseHeaders h;
  std::string want;
  for (int i = 0; i < 40; ++i) {
    const std::string value(static_cast<size_t>(i), static_cast<char>('a' + i % 26));
    if (i % 3 == 0) {
      const std::string line = "X-Line-" + std::to_string(i) + ": " + value + "\r\n";
      h.add_lines(line);
      want += line;
    } else {
      h.add("X-Field-" + std::to_string(i), value);
      want += "X-Field-" + std::to_string(i) + ": " + value + "\r\n";
    }
    ASSERT_EQ(h.lines(), want) << i;
  }
  EXPECT_GT(want.size(), 1000u);
  ResponseHeadParts p;
  p.headers = &h;
  p.content_length = 0;
  EXPECT_EQ(text(render_response_head(p)), "HTTP/1.1 200 OK\r\n" + want + "Content-Length: 0\r\n\r\n");
}

TEST(ResponseHead, Http10KeepAliveChunkedAndNoLength) {
  ResponseHeadParts p;
  p.http10 = true;
  p.status = 204;
  EXPECT_EQ(text(render_response_head(p)), "HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n");
  ResponseHeadParts live;
  live.chunked = true;
  live.close = true;
  EXPECT_EQ(text(render_response_head(live)),
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
}

}  // namespace
}  // namespace rill::http
