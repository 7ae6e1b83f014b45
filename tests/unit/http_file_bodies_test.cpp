// HttpFileBodies: one memory file per large shared buffer, reused by every response, released
// with the buffer; the bytes sent equal the buffer's.
#include "rill/server/http_file_bodies.h"

#include <event2/buffer.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace rill::server {
namespace {

BufferRef pattern(size_t n, uint8_t seed) {
  BufferRef b = SharedBuffer::create(n);
  for (size_t i = 0; i < n; ++i) b.get()->push_back(static_cast<uint8_t>(seed + i * 7));
  return b;
}

// Drains `b` into a temporary file with evbuffer_write (sendfile for file segments) and returns
// what arrived.
std::vector<uint8_t> drain(evbuffer* b) {
  FILE* f = std::tmpfile();
  EXPECT_NE(f, nullptr);
  const int fd = fileno(f);
  for (int i = 0; i < 1000 && evbuffer_get_length(b) > 0; ++i) {
    if (evbuffer_write(b, fd) < 0) break;
  }
  EXPECT_EQ(evbuffer_get_length(b), 0u);
  std::vector<uint8_t> out(static_cast<size_t>(lseek(fd, 0, SEEK_END)));
  EXPECT_EQ(pread(fd, out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
  std::fclose(f);
  return out;
}

std::vector<uint8_t> bytes_of(const BufferRef& b) { return {b.data(), b.data() + b.size()}; }

TEST(HttpFileBodies, SmallBodiesAreLeftToTheCaller) {
  HttpFileBodies bodies;
  evbuffer* out = evbuffer_new();
  EXPECT_FALSE(bodies.add(out, pattern(HttpFileBodies::kMinBytes - 1, 1)));
  EXPECT_FALSE(bodies.add(out, BufferRef()));
  EXPECT_EQ(evbuffer_get_length(out), 0u);
  EXPECT_EQ(bodies.files_made(), 0u);
  evbuffer_free(out);
}

TEST(HttpFileBodies, OneFilePerBufferAndTheBytesAreExact) {
  HttpFileBodies bodies;
  const BufferRef seg = pattern(200 * 1000 + 3, 5);
  for (int i = 0; i < 3; ++i) {
    evbuffer* out = evbuffer_new();
    evbuffer_add(out, "HEAD\r\n", 6);  // a head before the body, as evhttp writes it
    ASSERT_TRUE(bodies.add(out, seg));
    EXPECT_EQ(evbuffer_get_length(out), 6 + seg.size());
    std::vector<uint8_t> want = {'H', 'E', 'A', 'D', '\r', '\n'};
    const auto b = bytes_of(seg);
    want.insert(want.end(), b.begin(), b.end());
    EXPECT_EQ(drain(out), want) << "response " << i;
    evbuffer_free(out);
  }
  EXPECT_EQ(bodies.files_made(), 1u);  // written once, sent three times
  EXPECT_EQ(bodies.entries(), 1u);
}

TEST(HttpFileBodies, ABufferNobodyHoldsIsDroppedOnTheNextInsert) {
  HttpFileBodies bodies;
  BufferRef first = pattern(64 * 1024, 9);
  const auto first_bytes = bytes_of(first);
  evbuffer* in_flight = evbuffer_new();
  ASSERT_TRUE(bodies.add(in_flight, first));
  first = BufferRef();  // the store lets the segment go; a response still has it queued
  const BufferRef second = pattern(64 * 1024, 11);
  evbuffer* out = evbuffer_new();
  ASSERT_TRUE(bodies.add(out, second));
  EXPECT_EQ(bodies.entries(), 1u);  // the first one's entry is gone
  EXPECT_EQ(bodies.files_made(), 2u);
  EXPECT_EQ(drain(in_flight), first_bytes);  // the queued response still sends its bytes
  EXPECT_EQ(drain(out), bytes_of(second));
  evbuffer_free(in_flight);
  evbuffer_free(out);
}

TEST(HttpFileBodies, AHeldBufferKeepsItsFile) {
  HttpFileBodies bodies;
  const BufferRef a = pattern(32 * 1024, 1);
  const BufferRef b = pattern(32 * 1024, 2);
  evbuffer* out = evbuffer_new();
  ASSERT_TRUE(bodies.add(out, a));
  ASSERT_TRUE(bodies.add(out, b));
  ASSERT_TRUE(bodies.add(out, a));
  EXPECT_EQ(bodies.entries(), 2u);
  EXPECT_EQ(bodies.files_made(), 2u);
  auto want = bytes_of(a);
  const auto bb = bytes_of(b);
  want.insert(want.end(), bb.begin(), bb.end());
  const auto again = bytes_of(a);
  want.insert(want.end(), again.begin(), again.end());
  EXPECT_EQ(drain(out), want);
  evbuffer_free(out);
}

}  // namespace
}  // namespace rill::server
