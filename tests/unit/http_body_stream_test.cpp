// server::HttpBodyStream on a real event_base over a socketpair: the exact bytes of the chunked
// framing (one chunk per flush batch), a framed batch going out whole across partial writes while
// the next one waits, HTTP/1.0's unframed body, the graceful end and the client's EOF, and the
// connection's slot given back once.
#include "rill/server/http_body_stream.h"

#include <event2/event.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "rill/core/event_timer_queue.h"
#include "rill/net/connection.h"
#include "rill/net/flush_scheduler.h"

namespace rill::server {
namespace {

class HttpBodyStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    ours = net::UniqueFd(sv[0]);
    peer = net::UniqueFd(sv[1]);
    ctx.base = base.get();
    ctx.flusher = &flusher;
    ctx.timers = &timers;
  }
  void TearDown() override { body.reset(); }  // before the scheduler and the base

  // As HttpExchange::take_stream() hands it over: the connection with the response head queued.
  void make(bool chunked, const std::string& head = "") {
    auto conn = std::make_unique<net::PlainConnection>(base.get(), flusher, std::move(ours), "test");
    if (!head.empty()) conn->queue().push_control(SharedBuffer::copy_of(std::string_view(head)));
    body = std::make_unique<HttpBodyStream>(
        ctx, HttpStreamHandover{std::move(conn), chunked, [this] { ++released; }}, media::QueueLimits{},
        [this](const std::string& r) { closes.push_back(r); });
  }
  void push(const std::string& s) {
    body->pending().push_control(SharedBuffer::copy_of(std::string_view(s)));
  }
  bool run_until(const std::function<bool()>& pred, int ms = 3000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      event_base_loop(base.get(), EVLOOP_NONBLOCK);
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return pred();
  }
  // Reads what the peer has now, at most `at_most` bytes; false at EOF.
  bool drain_peer(size_t at_most = SIZE_MAX) {
    char buf[65536];
    while (at_most > 0) {
      const ssize_t n = ::read(peer.get(), buf, std::min(sizeof buf, at_most));
      if (n == 0) return false;
      if (n < 0) return true;
      got.append(buf, static_cast<size_t>(n));
      at_most -= static_cast<size_t>(n);
    }
    return true;
  }

  std::unique_ptr<event_base, void (*)(event_base*)> base{event_base_new(), event_base_free};
  net::FlushScheduler flusher{base.get()};
  EventTimerQueue timers{base.get()};
  net::ServerContext ctx;
  net::UniqueFd ours, peer;
  std::unique_ptr<HttpBodyStream> body;
  std::vector<std::string> closes;
  std::string got;
  int released = 0;  // release_slot calls
};

TEST_F(HttpBodyStreamTest, OneChunkPerBatchThenTheTerminatorAndClose) {
  make(true, "HTTP/1.1 200 OK\r\n\r\n");
  body->start();
  push("abc");
  push("defg");
  push("h");
  body->flush();
  ASSERT_TRUE(run_until([&] {
    drain_peer();
    return got.size() >= 32;
  }));
  EXPECT_EQ(got, "HTTP/1.1 200 OK\r\n\r\n8\r\nabcdefgh\r\n");
  push(std::string(300, 'x'));
  body->flush();
  EXPECT_TRUE(run_until([&] {
    drain_peer();
    return got.size() >= 32 + 5 + 300 + 2;
  }));
  EXPECT_EQ(got.substr(32), "12c\r\n" + std::string(300, 'x') + "\r\n");
  EXPECT_EQ(body->body_bytes(), 308u);
  push("end");
  body->end(std::chrono::milliseconds(3000));
  bool eof = false;
  ASSERT_TRUE(run_until([&] {
    eof = !drain_peer();
    return eof && !closes.empty();
  }));
  EXPECT_EQ(got.substr(32 + 307), "3\r\nend\r\n0\r\n\r\n");
  EXPECT_EQ(closes, std::vector<std::string>{"stream ended"});
  EXPECT_FALSE(body->open());
  EXPECT_EQ(released, 1);
  body.reset();
  EXPECT_EQ(released, 1) << "the slot is given back once";
}

TEST_F(HttpBodyStreamTest, AFramedBatchGoesOutWholeWhileTheNextWaits) {
  int small = 4096;
  ASSERT_EQ(::setsockopt(ours.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  make(true);
  body->start();
  const std::string big(512 * 1024, 'b');
  push(big);
  body->flush();
  event_base_loop(base.get(), EVLOOP_NONBLOCK);
  ASSERT_GT(body->queued_bytes(), 0u) << "the socket took everything: no partial write to test";
  push("zz");  // arrives while the big chunk is in flight: its own chunk, after the big one
  body->flush();
  const std::string want = "80000\r\n" + big + "\r\n2\r\nzz\r\n";
  ASSERT_TRUE(run_until(
      [&] {
        drain_peer(8192);
        return got.size() >= want.size();
      },
      10000));
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "framing broken across partial writes";
  EXPECT_EQ(body->queued_bytes(), 0u);
}

TEST_F(HttpBodyStreamTest, Http10IsUnframedAndEndsWithTheConnection) {
  make(false, "HTTP/1.0 200 OK\r\n\r\n");
  body->start();
  push("abc");
  body->flush();
  push("def");
  body->end(std::chrono::milliseconds(3000));
  bool eof = false;
  ASSERT_TRUE(run_until([&] {
    eof = !drain_peer();
    return eof;
  }));
  EXPECT_EQ(got, "HTTP/1.0 200 OK\r\n\r\nabcdef");
}

TEST_F(HttpBodyStreamTest, ClientEofIsReportedAndInputIsBounded) {
  make(true);
  body->start();
  ASSERT_EQ(::write(peer.get(), "GET / HTTP/1.1\r\n\r\n", 18), 18);  // ignored
  run_until([] { return false; }, 50);
  EXPECT_TRUE(closes.empty());
  EXPECT_TRUE(body->open());
  peer.reset();
  ASSERT_TRUE(run_until([&] { return !closes.empty(); }));
  EXPECT_EQ(closes, std::vector<std::string>{"peer closed"});
  EXPECT_EQ(released, 1);
}

TEST_F(HttpBodyStreamTest, ClientThatKeepsSendingIsClosed) {
  make(true);
  body->start();
  const std::string junk(8192, 'j');
  size_t sent = 0;
  ASSERT_TRUE(run_until([&] {
    if (sent <= HttpBodyStream::kMaxIgnoredInput) {
      const ssize_t n = ::write(peer.get(), junk.data(), junk.size());
      if (n > 0) sent += static_cast<size_t>(n);
    }
    return !closes.empty();
  }));
  EXPECT_FALSE(body->open());
}

TEST_F(HttpBodyStreamTest, TheSlotIsGivenBackOnceOnCloseOrDestruction) {
  make(true);
  body->start();
  EXPECT_EQ(released, 0);
  body->close("test");
  EXPECT_EQ(released, 1);
  EXPECT_TRUE(closes.empty()) << "close() is not reported";
  body.reset();
  EXPECT_EQ(released, 1);

  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  ours = net::UniqueFd(sv[0]);
  peer = net::UniqueFd(sv[1]);
  make(true);
  body->start();
  body.reset();  // destroyed open: the slot goes with it
  EXPECT_EQ(released, 2);
}

}  // namespace
}  // namespace rill::server
