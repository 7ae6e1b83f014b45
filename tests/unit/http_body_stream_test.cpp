// http::HttpBodyStream on a real event_base over a socketpair: the exact bytes of the chunked
// framing (one chunk per frame, the frame's shared bytes), chunks going out whole across partial
// writes and slow-consumer drops, HTTP/1.0's unframed body, body_bytes, the graceful end and the
// client's EOF, and the connection's slot given back once.
#include "rill/http/http_body_stream.h"

#include <event2/event.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rill/core/event_timer_queue.h"
#include "rill/net/connection.h"
#include "rill/net/flush_scheduler.h"
#include "rill/protocol/http_request_head.h"

namespace rill::http {
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
  void make(bool chunked, const std::string& head = "", media::QueueLimits limits = {}) {
    auto conn = std::make_unique<net::PlainConnection>(base.get(), flusher, std::move(ours), "test");
    if (!head.empty()) conn->queue().push_control(SharedBuffer::copy_of(std::string_view(head)));
    body = std::make_unique<HttpBodyStream>(
        ctx, HttpStreamHandover{std::move(conn), chunked, [this] { ++released; }},
        [this](const std::string& r) { closes.push_back(r); });
    body->connection().set_queue_limits(limits);  // the owner's (an FLV player's: the app's)
  }
  static std::span<const uint8_t> bytes(std::string_view s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
  }
  static std::string str(const BufferRef& b) {
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  static media::FramePtr frame(media::MediaType type, uint32_t ts, const std::string& payload,
                               bool key = false) {
    auto f = std::make_shared<media::MediaFrame>();
    f->type = type;
    f->timestamp = ts;
    f->keyframe = key;
    f->payload = SharedBuffer::copy_of(std::string_view(payload));
    return f;
  }
  // As HttpFlvSession::on_frame does: the frame's chunk when chunked, its bare tag when not.
  void push_frame(const media::MediaFrame& f) {
    body->connection().queue().push_frame(f, body->chunked() ? f.flv_chunk() : f.flv_tag());
    body->request_flush(f.type == media::MediaType::Video);
  }
  // The body is a sequence of chunks ending with the last chunk, nothing after it.
  static bool decodes_whole(const std::string& body) {
    protocol::HttpChunkedDecoder d(64 << 20);
    size_t used = 0;
    std::string out;
    return d.feed(bytes(body), used, out) == protocol::HttpChunkedDecoder::Result::Done &&
           used == body.size();
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
  net::WorkerCore ctx;
  net::UniqueFd ours, peer;
  std::unique_ptr<HttpBodyStream> body;
  std::vector<std::string> closes;
  std::string got;
  int released = 0;  // release_slot calls
};

TEST_F(HttpBodyStreamTest, OneChunkPerFrameThenTheLastChunkAndClose) {
  const std::string head = "HTTP/1.1 200 OK\r\n\r\n";
  make(true, head);
  body->start();
  body->push_control(bytes("FLV"));
  auto a = frame(media::MediaType::Audio, 10, "abc");
  auto v = frame(media::MediaType::Video, 20, std::string(300, 'v'), true);
  push_frame(*a);
  push_frame(*v);
  body->flush_now();
  const std::string want = head + "3\r\nFLV\r\n" + str(a->flv_chunk()) + str(v->flv_chunk());
  ASSERT_TRUE(run_until([&] {
    drain_peer();
    return got.size() >= want.size();
  }));
  EXPECT_TRUE(got == want) << "one chunk per frame, the frame's own shared bytes";
  EXPECT_EQ(body->body_bytes(), want.size() - head.size()) << "sent bytes after the head, framing included";
  EXPECT_EQ(body->connection().queue().frames_dropped(), 0u);

  auto b = frame(media::MediaType::Audio, 30, "end");
  push_frame(*b);
  body->end(std::chrono::milliseconds(3000));
  bool eof = false;
  ASSERT_TRUE(run_until([&] {
    eof = !drain_peer();
    return eof && !closes.empty();
  }));
  EXPECT_TRUE(got == want + str(b->flv_chunk()) + "0\r\n\r\n");
  EXPECT_TRUE(decodes_whole(got.substr(head.size()))) << "a valid chunked body";
  EXPECT_EQ(closes, std::vector<std::string>{"stream ended"});
  EXPECT_FALSE(body->open());
  EXPECT_EQ(released, 1);
  body.reset();
  EXPECT_EQ(released, 1) << "the slot is given back once";
}

TEST_F(HttpBodyStreamTest, AChunkGoesOutWholeAcrossPartialWritesAndDropsTakeWholeFrames) {
  int small = 4096;
  ASSERT_EQ(::setsockopt(ours.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  media::QueueLimits limits;
  limits.soft_bytes = 64 * 1024;  // past it, video waits for the next keyframe
  make(true, "", limits);
  body->start();
  std::vector<media::FramePtr> frames;
  for (uint32_t i = 0; i < 40; ++i) {  // 40 x 16 KiB of video, a keyframe every 10th
    frames.push_back(frame(media::MediaType::Video, i * 40,
                           std::string(16 * 1024, static_cast<char>('a' + i % 26)), i % 10 == 0));
    push_frame(*frames.back());
    body->flush_now();
    event_base_loop(base.get(), EVLOOP_NONBLOCK);
    drain_peer(1024);  // a slow reader: the socket stays full
  }
  EXPECT_GT(body->connection().queue().frames_dropped(), 0u)
      << "the slow reader's queue never passed the soft bound";
  body->end(std::chrono::milliseconds(10000));
  ASSERT_TRUE(run_until([&] { return !drain_peer(8192); }, 10000));
  // Every frame that went out went out whole as its own chunk, in order; dropped ones left no trace.
  std::string want;
  size_t sent = 0;
  for (const auto& f : frames) {
    const std::string c = str(f->flv_chunk());
    if (got.compare(want.size(), c.size(), c) == 0) {
      want += c;
      ++sent;
    }
  }
  want += "0\r\n\r\n";
  EXPECT_EQ(sent + body->connection().queue().frames_dropped(), frames.size());
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "framing broken across partial writes or drops";
  EXPECT_TRUE(decodes_whole(got));
}

TEST_F(HttpBodyStreamTest, Http10IsUnframedAndEndsWithTheConnection) {
  make(false, "HTTP/1.0 200 OK\r\n\r\n");
  body->start();
  body->push_control(bytes("FLV"));
  auto a = frame(media::MediaType::Audio, 10, "abc");
  push_frame(*a);
  body->flush_now();
  body->end(std::chrono::milliseconds(3000));
  bool eof = false;
  ASSERT_TRUE(run_until([&] {
    eof = !drain_peer();
    return eof;
  }));
  EXPECT_TRUE(got == "HTTP/1.0 200 OK\r\n\r\nFLV" + str(a->flv_tag()));
}

TEST_F(HttpBodyStreamTest, BodyBytesStartAfterTheHeadWhateverTheConnectionSentBefore) {
  // A keep-alive connection answered a request before this one: its bytes are not the body's.
  auto conn = std::make_unique<net::PlainConnection>(base.get(), flusher, std::move(ours), "test");
  const std::string before = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
  const std::string head = "HTTP/1.1 200 OK\r\n\r\n";
  conn->queue().push_control(SharedBuffer::copy_of(std::string_view(before)));
  conn->flush();
  ASSERT_EQ(conn->bytes_out(), before.size());
  conn->queue().push_control(SharedBuffer::copy_of(std::string_view(head)));
  body = std::make_unique<HttpBodyStream>(ctx, HttpStreamHandover{std::move(conn), true, [] {}},
                                          [](const std::string&) {});
  body->start();
  EXPECT_EQ(body->body_bytes(), 0u);
  body->push_control(bytes("FLV"));
  body->flush_now();
  ASSERT_TRUE(run_until([&] {
    drain_peer();
    return got.size() >= before.size() + head.size() + 8u;
  }));
  EXPECT_EQ(got, before + head + "3\r\nFLV\r\n");
  EXPECT_EQ(body->body_bytes(), 8u);  // "3\r\nFLV\r\n"
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
}  // namespace rill::http
