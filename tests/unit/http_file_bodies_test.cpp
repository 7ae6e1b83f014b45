// HttpFileBodies: one memory file per large shared buffer, reused by every response, released
// with the buffer; the file holds the buffer's bytes.
#include "rill/http/http_file_bodies.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

namespace rill::http {
namespace {

BufferRef pattern(size_t n, uint8_t seed) {
  BufferRef b = SharedBuffer::create(n);
  for (size_t i = 0; i < n; ++i) b.get()->push_back(static_cast<uint8_t>(seed + i * 7));
  return b;
}

std::vector<uint8_t> bytes_of(const BufferRef& b) { return {b.data(), b.data() + b.size()}; }

std::vector<uint8_t> contents(const net::FileBody& f) {
  std::vector<uint8_t> out(f.size + 1);  // one more: the file must not be longer
  const ssize_t n = ::pread(f.fd.get(), out.data(), out.size(), 0);
  EXPECT_GE(n, 0);
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

TEST(HttpFileBodies, SmallBodiesStayInMemory) {
  HttpFileBodies bodies;
  EXPECT_EQ(bodies.file_for(pattern(HttpFileBodies::kMinBytes - 1, 1)), nullptr);
  EXPECT_EQ(bodies.file_for(BufferRef()), nullptr);
  EXPECT_EQ(bodies.files_made(), 0u);
  EXPECT_EQ(bodies.entries(), 0u);
}

TEST(HttpFileBodies, OneFilePerBufferWithItsExactBytes) {
  HttpFileBodies bodies;
  const BufferRef seg = pattern(200 * 1000 + 3, 5);
  const auto first = bodies.file_for(seg);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->size, seg.size());
  EXPECT_EQ(contents(*first), bytes_of(seg));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bodies.file_for(seg), first) << "response " << i;
  EXPECT_EQ(bodies.files_made(), 1u);  // written once, sent four times
  EXPECT_EQ(bodies.entries(), 1u);
  EXPECT_FALSE(bodies.disabled());
}

TEST(HttpFileBodies, ABufferNobodyHoldsIsDroppedOnTheNextInsert) {
  HttpFileBodies bodies;
  BufferRef first = pattern(64 * 1024, 9);
  const auto first_bytes = bytes_of(first);
  const auto in_flight = bodies.file_for(first);  // a response still sending it
  ASSERT_NE(in_flight, nullptr);
  first = BufferRef();  // the store lets the segment go
  const BufferRef second = pattern(64 * 1024, 11);
  ASSERT_NE(bodies.file_for(second), nullptr);
  EXPECT_EQ(bodies.entries(), 1u);  // the first one's entry is gone
  EXPECT_EQ(bodies.files_made(), 2u);
  EXPECT_EQ(contents(*in_flight), first_bytes);  // the response in flight keeps its file
}

TEST(HttpFileBodies, AHeldBufferKeepsItsFile) {
  HttpFileBodies bodies;
  const BufferRef a = pattern(32 * 1024, 1);
  const BufferRef b = pattern(32 * 1024, 2);
  const auto fa = bodies.file_for(a);
  ASSERT_NE(bodies.file_for(b), nullptr);
  EXPECT_EQ(bodies.file_for(a), fa);
  EXPECT_EQ(bodies.entries(), 2u);
  EXPECT_EQ(bodies.files_made(), 2u);
}

TEST(HttpFileBodies, TheCacheIsBounded) {
  HttpFileBodies bodies;
  std::vector<BufferRef> held;
  for (size_t i = 0; i < HttpFileBodies::kMaxEntries; ++i) {
    held.push_back(pattern(HttpFileBodies::kMinBytes, static_cast<uint8_t>(i)));
    ASSERT_NE(bodies.file_for(held.back()), nullptr) << i;
  }
  const BufferRef one_more = pattern(HttpFileBodies::kMinBytes, 77);
  EXPECT_EQ(bodies.file_for(one_more), nullptr) << "over kMaxEntries the body goes from memory";
  held.pop_back();  // a segment leaves the store: room again
  EXPECT_NE(bodies.file_for(one_more), nullptr);
  EXPECT_EQ(bodies.entries(), HttpFileBodies::kMaxEntries);
}

}  // namespace
}  // namespace rill::http
