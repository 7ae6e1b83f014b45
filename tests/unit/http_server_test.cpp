// HttpServer + HttpConnection + HttpExchange (http/http_server.h): the worker's HTTP/1.1 server
// on a loopback listener, driven by a blocking client socket and the event loop in turns. What the
// integration tests cannot reach: held exchanges (answered later, abandoned by a client that
// leaves), the handle that reads null afterwards, a stream taken from a held exchange, the
// request deadline, and the connection count.
#include "rill/http/http_server.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "rill/net/connection.h"
#include "rill/net/worker_core.h"
#include "support/test_worker.h"

namespace rill::http {
namespace {

class HttpServerTest : public ::testing::Test {
 protected:
  HttpServerTest() : worker_(server_config()), core_(worker_.core()), base_(worker_.base()) {
    server_ = std::make_unique<HttpServer>(core_);
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listen_fd_, 16), 0);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    server_->listen(listen_fd_);
  }
  ~HttpServerTest() override {
    server_.reset();
    ::close(listen_fd_);
  }

  static config::Config server_config() {
    config::Config cfg;
    cfg.http.timeout = std::chrono::milliseconds(1500);
    cfg.http.max_connections = 3;
    return cfg;
  }

  int connect_client() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port_);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    timeval tv{0, 20 * 1000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
  }
  void loop(int ms = 30) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) event_base_loop(base_, EVLOOP_NONBLOCK);
  }
  // What the client has received so far (the loop runs between reads); "" after a close.
  std::string read_some(int fd, int ms = 200) {
    std::string got;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      loop(5);
      char buf[65536];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) got.append(buf, static_cast<size_t>(n));
      if (n == 0) break;
    }
    return got;
  }
  static void send_all(int fd, const std::string& s) {
    ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
  }
  // True once the server closed the client's connection.
  bool closed_by_server(int fd, int ms = 3000) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      loop(5);
      char c;
      const ssize_t n = ::recv(fd, &c, 1, 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    }
    return false;
  }

  testsupport::TestWorker worker_;  // first: outlives the server
  net::WorkerCore& core_;
  event_base* base_;
  std::unique_ptr<HttpServer> server_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
};

TEST_F(HttpServerTest, HeldExchangeIsAnsweredLaterAndTheConnectionGoesOn) {
  HttpHeld held;
  server_->routes().add(HttpMethod::Get, "/later", PathMatch::Exact,
                        [&](HttpExchange& ex) { held = ex.hold(); });
  const int fd = connect_client();
  send_all(fd, "GET /later HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(read_some(fd, 100), "");  // held: nothing yet, and the pipelined request waits
  ASSERT_TRUE(held);
  held.get()->add_header("Content-Type", "text/plain");
  EXPECT_EQ(held.get()->reply(200, std::string_view("late\n")), 5u);
  EXPECT_FALSE(held) << "an answered exchange is not reachable any more";
  const std::string got = read_some(fd);
  const size_t first = got.find("HTTP/1.1 200 OK\r\n");
  const size_t second = got.find("HTTP/1.1 200 OK\r\n", first + 1);
  ASSERT_NE(first, std::string::npos) << got;
  ASSERT_NE(second, std::string::npos) << "the pipelined request is answered after the held one: " << got;
  EXPECT_LT(got.find("late\n"), second);
  EXPECT_NE(got.find("ok worker=", second), std::string::npos);
  ::close(fd);
}

// What a held exchange waits with (HttpHeldState), counting what happens to it.
struct CountedState final : HttpHeldState {
  CountedState(int& abandoned, int& destroyed) : abandoned_(abandoned), destroyed_(destroyed) {}
  ~CountedState() override { ++destroyed_; }
  void abandoned(const HttpExchange& ex) override {
    EXPECT_EQ(ex.info().path, "/later");
    ++abandoned_;
  }
  HttpHeld held;
  std::string reply = "late\n";
  int& abandoned_;
  int& destroyed_;
};

TEST_F(HttpServerTest, AClientThatLeavesAbandonsItsHeldExchange) {
  HttpHeld held;
  int abandoned = 0, destroyed = 0;
  server_->routes().add(HttpMethod::Get, "/later", PathMatch::Exact, [&](HttpExchange& ex) {
    held = ex.hold(std::make_unique<CountedState>(abandoned, destroyed));
  });
  const int fd = connect_client();
  send_all(fd, "GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
  loop(50);
  ASSERT_TRUE(held);
  EXPECT_EQ(server_->connections(), 1u);
  ::close(fd);
  loop(100);
  EXPECT_EQ(abandoned, 1);
  EXPECT_EQ(destroyed, 1) << "the exchange owned its state and let it go";
  EXPECT_FALSE(held) << "the handle reads null once the client left";
  EXPECT_EQ(server_->connections(), 0u);
}

// The answer usually comes from the state's own callback, and reply() ends a held exchange (the
// connection goes on with the next request): the state, the callback's closure included, lives
// until the callback returned and is destroyed on the next loop turn (ASan: no use after free).
TEST_F(HttpServerTest, AHeldStateOutlivesTheCallbackThatAnswers) {
  int abandoned = 0, destroyed = 0;
  CountedState* state = nullptr;
  server_->routes().add(HttpMethod::Get, "/later", PathMatch::Exact, [&](HttpExchange& ex) {
    auto owned = std::make_unique<CountedState>(abandoned, destroyed);
    state = owned.get();
    state->held = ex.hold(std::move(owned));
  });
  const int fd = connect_client();
  send_all(fd, "GET /later HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  loop(50);
  ASSERT_NE(state, nullptr);
  std::function<void()> callback = [state] {
    EXPECT_EQ(state->held.get()->reply(200, state->reply), 5u);  // the exchange is gone after this
    EXPECT_FALSE(state->held);
    EXPECT_EQ(state->reply, "late\n") << "the state is still there";
  };
  callback();
  EXPECT_EQ(destroyed, 0) << "destroyed on the next loop turn, not under the callback";
  const std::string got = read_some(fd);
  EXPECT_NE(got.find("late\n"), std::string::npos) << got;
  EXPECT_NE(got.find("ok worker="), std::string::npos) << "the pipelined request is answered next";
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(abandoned, 0) << "an answered exchange abandons nothing";
  ::close(fd);
}

// A continuation that holds the exchange again (an admission decided, then an HLS wait) gives the
// first state up without abandoning it.
TEST_F(HttpServerTest, HoldingAgainGivesTheFirstStateUp) {
  int abandoned = 0, destroyed = 0;
  HttpHeld held;
  server_->routes().add(HttpMethod::Get, "/later", PathMatch::Exact, [&](HttpExchange& ex) {
    held = ex.hold(std::make_unique<CountedState>(abandoned, destroyed));
  });
  const int fd = connect_client();
  send_all(fd, "GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
  loop(50);
  ASSERT_TRUE(held);
  int abandoned2 = 0, destroyed2 = 0;
  held = held.get()->hold(std::make_unique<CountedState>(abandoned2, destroyed2));
  loop(20);
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(abandoned, 0);
  ::close(fd);
  loop(100);
  EXPECT_EQ(abandoned2, 1) << "the second state is the one the departure cancels";
  EXPECT_EQ(destroyed2, 1);
  EXPECT_EQ(abandoned, 0);
}

TEST_F(HttpServerTest, AStreamTakenFromAHeldExchangeKeepsItsConnection) {
  HttpHeld held;
  server_->routes().add(HttpMethod::Get, "/live", PathMatch::Exact,
                        [&](HttpExchange& ex) { held = ex.hold(); });
  const int fd = connect_client();
  send_all(fd, "GET /live HTTP/1.1\r\nHost: x\r\n\r\n");
  loop(50);
  ASSERT_TRUE(held);
  // Nothing but the handover owns the exchange now: it may be destroyed inside take_stream.
  HttpStreamHandover h = held.get()->take_stream(200);
  ASSERT_TRUE(h);
  EXPECT_TRUE(h.chunked);
  EXPECT_EQ(server_->connections(), 1u) << "a streamed body stays counted";
  struct Sink final : net::ConnectionHandler {
    void on_data(std::span<const uint8_t>) override {}
    void on_close(const std::string&) override {}
  } sink;
  h.conn->start(sink);
  h.conn->send(SharedBuffer::copy_of(std::string_view("5\r\nhello\r\n")));
  const std::string got = read_some(fd);
  EXPECT_NE(got.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << got;
  EXPECT_NE(got.find("Connection: close\r\n"), std::string::npos) << got;
  EXPECT_NE(got.find("\r\n\r\n5\r\nhello\r\n"), std::string::npos) << got;
  h.conn->close("done");
  h.conn.reset();
  h.release_slot();
  h.release_slot();  // once only
  EXPECT_EQ(server_->connections(), 0u);
  ::close(fd);
}

// The request's header values view its head (protocol/http_request_head.h), which the exchange
// owns: a head that arrived in pieces, then pipelined bytes read while the exchange is held (the
// connection's input buffer grows and is erased), and the held exchange still reads its fields.
TEST_F(HttpServerTest, AHeldExchangeReadsItsHeadAfterTheConnectionReadOn) {
  HttpHeld held;
  server_->routes().add(HttpMethod::Get, "/later", PathMatch::Exact,
                        [&](HttpExchange& ex) { held = ex.hold(); });
  const int fd = connect_client();
  const std::string tag(200, 't');
  for (const std::string& piece : {std::string("GET /later HT"), std::string("TP/1.1\r\nHo"),
                                   std::string("st: x\r\nX-Tag: ") + tag.substr(0, 90), tag.substr(90) + "\r",
                                   std::string("\nUser-Agent: piecewise/1\r\n\r")}) {
    send_all(fd, piece);
    loop(20);
  }
  send_all(fd, "\nGET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(4000, 'p') + "\r\n\r\n");
  loop(50);
  ASSERT_TRUE(held);
  HttpExchange& ex = *held.get();
  ASSERT_NE(ex.header("x-tag"), nullptr);
  EXPECT_EQ(*ex.header("x-tag"), tag);
  ASSERT_NE(ex.header("User-Agent"), nullptr);
  EXPECT_EQ(*ex.header("User-Agent"), "piecewise/1");
  EXPECT_EQ(ex.header("X-Pad"), nullptr) << "the pipelined request's fields are its own";
  ex.add_header("X-Echo", *ex.header("user-agent"));
  ex.reply(200, std::string_view("late\n"));
  const std::string got = read_some(fd);
  EXPECT_NE(got.find("X-Echo: piecewise/1\r\n"), std::string::npos) << got.substr(0, 300);
  EXPECT_NE(got.find("ok worker="), std::string::npos) << "the pipelined request is answered next";
  ::close(fd);
}

// The CORS lines are rendered once per http.cors_origin, again when a reload changes it.
TEST_F(HttpServerTest, CorsHeadersFollowTheConfiguredOrigin) {
  const auto error_head = [&] {
    const int fd = connect_client();
    send_all(fd, "GET /live/missing.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string got = read_some(fd);
    ::close(fd);
    return got.substr(0, got.find("\r\n\r\n") + 2);
  };
  for (const char* origin : {"*", "https://a.example", "*", ""}) {
    SCOPED_TRACE(origin);
    config::Config cfg = *core_.config;
    cfg.http.cors_origin = origin;
    core_.config = std::make_shared<const config::Config>(cfg);
    for (int i = 0; i < 2; ++i) {
      const std::string head = error_head();
      EXPECT_EQ(head.rfind("HTTP/1.1 404 ", 0), 0u) << head;
      const std::string allow = std::string("Access-Control-Allow-Origin: ") + origin + "\r\n";
      EXPECT_EQ(head.find(allow) != std::string::npos, *origin != '\0') << head;
      EXPECT_EQ(head.find("Access-Control-Expose-Headers: ") != std::string::npos, *origin != '\0') << head;
      EXPECT_EQ(head.find("Vary: Origin\r\n") != std::string::npos,
                std::string(origin) == "https://a.example");
      EXPECT_NE(head.find("Content-Type: text/plain"), std::string::npos) << head;
    }
  }
}

TEST_F(HttpServerTest, ARequestMustArriveWithinTheTimeout) {
  const int slow = connect_client();
  send_all(slow, "GET /healthz HTTP/1.1\r\nHo");  // half a head, then silence
  const int idle = connect_client();              // nothing at all
  EXPECT_TRUE(closed_by_server(slow, 3500));
  EXPECT_TRUE(closed_by_server(idle, 1000));
  ::close(slow);
  ::close(idle);
}

TEST_F(HttpServerTest, ConnectionsOverTheLimitAreClosedAtOnce) {
  int fds[4];
  for (int& fd : fds) fd = connect_client();
  loop(50);
  EXPECT_EQ(server_->connections(), 3u);
  EXPECT_TRUE(closed_by_server(fds[3], 500));
  send_all(fds[0], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(read_some(fds[0]).find("http_connections=3"), std::string::npos);
  for (int fd : fds) ::close(fd);
}

TEST_F(HttpServerTest, MalformedRequestIsAnsweredAndClosed) {
  const int fd = connect_client();
  send_all(fd, "GET /healthz HTTP/1.1\r\nBad Header: x\r\n\r\n");
  const std::string got = read_some(fd);
  EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("Connection: close\r\n"), std::string::npos);
  EXPECT_TRUE(closed_by_server(fd, 500));
  ::close(fd);
}

// RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1
// request message that lacks a Host header field"; HTTP/1.0 has no such rule.
TEST_F(HttpServerTest, Http11WithoutHostIsRefusedAndHttp10IsServed) {
  const int fd = connect_client();
  send_all(fd, "GET /healthz HTTP/1.1\r\nAccept: */*\r\n\r\n");
  const std::string got = read_some(fd);
  EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("without a Host field"), std::string::npos) << got;
  EXPECT_TRUE(closed_by_server(fd, 500));
  ::close(fd);

  const int old = connect_client();
  send_all(old, "GET /healthz HTTP/1.0\r\n\r\n");
  const std::string ok = read_some(old);
  EXPECT_EQ(ok.rfind("HTTP/1.0 200 ", 0), 0u) << ok;
  ::close(old);
}

}  // namespace
}  // namespace rill::http
