// net::Connection on a real event_base, over socketpairs: reading, batched writes of shared
// buffers, partial writes, EOF, close; the TLS flavour with a throwaway self-signed certificate;
// net::connect_unix.
#include <gtest/gtest.h>

#include <event2/event.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "rill/net/connection.h"
#include "rill/net/socket.h"
#include "rill/net/tls_connection.h"

namespace rill::net {
namespace {

struct Recorder final : ConnectionHandler {
  std::string data;
  std::vector<std::string> closes;
  size_t largest_slice = 0;
  std::function<void()> after_data;  // runs after each delivery
  std::function<void()> after_close;
  size_t drains = 0;
  void on_drained() override { ++drains; }
  void on_data(std::span<const uint8_t> b) override {
    data.append(reinterpret_cast<const char*>(b.data()), b.size());
    largest_slice = std::max(largest_slice, b.size());
    if (after_data) after_data();
  }
  void on_close(const std::string& reason) override {
    closes.push_back(reason);
    if (after_close) after_close();
  }
};

std::string pattern(size_t n, size_t seed = 0) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + seed) % 26);
  return s;
}

class ConnectionFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    ours = UniqueFd(sv[0]);
    peer = UniqueFd(sv[1]);
  }
  void TearDown() override {
    // Connections go before the scheduler and the base they use.
    conn.reset();
    other.reset();
  }
  std::unique_ptr<Connection> plain() {
    return std::make_unique<PlainConnection>(base.get(), flusher, std::move(ours), "test");
  }
  // Runs the loop until pred() holds (true) or `ms` pass (false). `also` runs each turn.
  bool run_until(const std::function<bool()>& pred, int ms = 3000, const std::function<void()>& also = {}) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      event_base_loop(base.get(), EVLOOP_NONBLOCK);
      if (also) also();
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return pred();
  }
  // Reads what the peer end has now (non-blocking); false at EOF.
  bool drain_peer(std::string& into, size_t at_most = SIZE_MAX) {
    char buf[65536];
    while (at_most > 0) {
      const ssize_t n = ::read(peer.get(), buf, std::min(sizeof buf, at_most));
      if (n == 0) return false;
      if (n < 0) return true;
      into.append(buf, static_cast<size_t>(n));
      at_most -= static_cast<size_t>(n);
    }
    return true;
  }
  void write_peer(const std::string& s) { ASSERT_EQ(::write(peer.get(), s.data(), s.size()), static_cast<ssize_t>(s.size())); }

  std::unique_ptr<event_base, decltype(&event_base_free)> base{event_base_new(), &event_base_free};
  FlushScheduler flusher{base.get()};
  UniqueFd ours, peer;
  Recorder rec;
  std::unique_ptr<Connection> conn, other;
};

// Every test runs twice: sends with sendmsg, and through the scheduler's io_uring (send_ring.h).
class ConnectionTest : public ConnectionFixture, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    ConnectionFixture::SetUp();
    if (GetParam()) {
      std::string why;
      auto ring = SendRing::create(&why);
      if (!ring) GTEST_SKIP() << "no io_uring here: " << why;
      flusher.use_ring(std::move(ring));
    }
  }
};

TEST_P(ConnectionTest, ReadsBytesThenReportsEofOnce) {
  conn = plain();
  conn->start(rec);
  write_peer("hello ");
  write_peer("world");
  ASSERT_TRUE(run_until([&] { return rec.data == "hello world"; }));
  EXPECT_EQ(conn->bytes_in(), 11u);
  peer.reset();
  ASSERT_TRUE(run_until([&] { return !rec.closes.empty(); }));
  run_until([] { return false; }, 50);
  EXPECT_EQ(rec.closes, std::vector<std::string>{"peer closed"});
  EXPECT_EQ(conn->state(), Connection::State::Closed);
  EXPECT_EQ(conn->fd(), -1);
}

TEST_P(ConnectionTest, WritesManySharedBuffersInOrderWithoutCopies) {
  conn = plain();
  conn->start(rec);
  std::vector<BufferRef> pieces;
  for (size_t i = 0; i < 50; ++i) pieces.push_back(SharedBuffer::copy_of(std::string_view(pattern(1 + i * 13, i))));
  std::string expected;
  for (size_t round = 0; round < 200; ++round) {  // 10000 buffers: several IOV_MAX batches
    for (const auto& p : pieces) {
      conn->queue().push_control(p);  // the same buffers, referenced again and again
      expected.append(p->view());
    }
  }
  EXPECT_EQ(pieces[0]->use_count(), 201u);
  conn->request_flush();
  std::string got;
  ASSERT_TRUE(run_until([&] { drain_peer(got); return got.size() >= expected.size(); }));
  EXPECT_EQ(got, expected);
  EXPECT_EQ(conn->bytes_out(), expected.size());
  EXPECT_EQ(conn->queued_bytes(), 0u);
  EXPECT_EQ(pieces[0]->use_count(), 1u);  // the queue let go of every reference
}

TEST_P(ConnectionTest, PartialWritesResumeMidBufferUnderBackPressure) {
  const int small = 4096;
  ASSERT_EQ(::setsockopt(ours.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  ASSERT_EQ(::setsockopt(peer.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
  conn = plain();
  conn->start(rec);
  std::string expected;
  for (size_t i = 0; i < 20; ++i) {  // 100 KB buffers: each goes out in many pieces
    const std::string s = pattern(100 * 1000 + i, i);
    conn->send(SharedBuffer::copy_of(std::string_view(s)));
    expected += s;
  }
  event_base_loop(base.get(), EVLOOP_NONBLOCK);  // the first flush fills the socket
  EXPECT_GT(conn->queued_bytes(), 0u);
  EXPECT_LT(conn->queued_bytes(), expected.size());
  std::string got;
  ASSERT_TRUE(run_until([&] { return got.size() >= expected.size(); }, 10000, [&] { drain_peer(got, 3000); }));
  EXPECT_EQ(got, expected);
  EXPECT_EQ(conn->queued_bytes(), 0u);
  EXPECT_TRUE(rec.closes.empty());
}

TEST_P(ConnectionTest, CloseAfterFlushSendsEverythingThenReportsTheReason) {
  conn = plain();
  conn->start(rec);
  const std::string s = pattern(1 << 20);
  conn->send(SharedBuffer::copy_of(std::string_view(s)));
  conn->close_after_flush("answered");
  EXPECT_EQ(conn->state(), Connection::State::Closing);
  write_peer("ignored: no more reading");
  std::string got;
  bool open = true;
  ASSERT_TRUE(run_until([&] { return !open; }, 5000, [&] { open = drain_peer(got); }));
  EXPECT_EQ(got, s);
  EXPECT_EQ(rec.closes, std::vector<std::string>{"answered"});
  EXPECT_EQ(rec.data, "");
}

TEST_P(ConnectionTest, CloseDropsTheQueueWithoutACallback) {
  conn = plain();
  conn->start(rec);
  conn->send(SharedBuffer::copy_of(std::string_view("never sent")));
  conn->close("bye");
  conn->send(SharedBuffer::copy_of(std::string_view("ignored")));
  EXPECT_EQ(conn->close_reason(), "bye");
  EXPECT_EQ(conn->queued_bytes(), 0u);
  std::string got;
  bool open = true;
  ASSERT_TRUE(run_until([&] { return !open; }, 2000, [&] { open = drain_peer(got); }));
  EXPECT_EQ(got, "");
  EXPECT_TRUE(rec.closes.empty());
}

TEST_P(ConnectionTest, PausedReadingHoldsInputUntilResumed) {
  conn = plain();
  conn->start(rec);
  conn->pause_reading();
  write_peer("later");
  run_until([] { return false; }, 50);
  EXPECT_EQ(rec.data, "");
  conn->resume_reading();
  ASSERT_TRUE(run_until([&] { return rec.data == "later"; }));
}

TEST_P(ConnectionTest, ReadsInBoundedSlices) {
  const int big = 1 << 20;
  ::setsockopt(peer.get(), SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  conn = plain();
  conn->start(rec);
  const std::string s = pattern(150 * 1000);
  size_t sent = 0;
  ASSERT_TRUE(run_until([&] { return rec.data.size() == s.size(); }, 5000, [&] {
    const ssize_t n = ::write(peer.get(), s.data() + sent, s.size() - sent);
    if (n > 0) sent += static_cast<size_t>(n);
  }));
  EXPECT_EQ(rec.data, s);
  EXPECT_LE(rec.largest_slice, Connection::kReadSlice);
}

TEST_P(ConnectionTest, HandlerMayDestroyTheConnectionInsideItsCallbacks) {
  conn = plain();
  rec.after_data = [&] { conn.reset(); };
  conn->start(rec);
  write_peer("x");
  ASSERT_TRUE(run_until([&] { return conn == nullptr; }));

  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  Recorder second;
  other = std::make_unique<PlainConnection>(base.get(), flusher, UniqueFd(sv[0]), "second");
  second.after_close = [&] { other.reset(); };
  other->start(second);
  other->send(SharedBuffer::copy_of(std::string_view("bye")));
  other->close_after_flush("done");  // on_close from inside flush(), which the scheduler runs
  ASSERT_TRUE(run_until([&] { return other == nullptr; }));
  EXPECT_EQ(second.closes, std::vector<std::string>{"done"});
  ::close(sv[1]);
}

TEST_P(ConnectionTest, WriteToAClosedPeerIsAnErrorNotASignal) {
  conn = plain();
  conn->start(rec);
  peer.reset();
  conn->send(SharedBuffer::copy_of(std::string_view(pattern(300000))));
  ASSERT_TRUE(run_until([&] { return !rec.closes.empty(); }));
  EXPECT_EQ(rec.closes.size(), 1u);
  EXPECT_TRUE(rec.closes[0] == "peer closed" || rec.closes[0].rfind("write: ", 0) == 0) << rec.closes[0];
}

TEST_P(ConnectionTest, NewQueueLimitsKeepWhatIsQueued) {
  conn = plain();
  conn->queue().push_control(SharedBuffer::copy_of(std::string_view("abc")));
  conn->queue().push_control(SharedBuffer::copy_of(std::string_view("def")));
  conn->queue().consume(1);  // as if "a" had been written
  media::QueueLimits l;
  l.soft_bytes = 10;
  conn->set_queue_limits(l);
  EXPECT_EQ(conn->queued_bytes(), 5u);
  conn->start(rec);
  std::string got;
  ASSERT_TRUE(run_until([&] { drain_peer(got); return got.size() >= 5; }));
  EXPECT_EQ(got, "bcdef");
}

// ---------------------------------------------------------------- send_file

std::shared_ptr<const FileBody> file_of(const std::string& s) {
  auto f = memory_file_of({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  EXPECT_NE(f, nullptr) << "memfd_create: " << std::strerror(errno);
  return f;
}

TEST_P(ConnectionTest, AFileFollowsTheQueueByteExactUnderBackPressure) {
  const int small = 4096;
  ASSERT_EQ(::setsockopt(ours.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  ASSERT_EQ(::setsockopt(peer.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
  conn = plain();
  conn->start(rec);
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 300001\r\n\r\n";
  const std::string body = pattern(300001, 3);
  const auto file = file_of(body);
  ASSERT_TRUE(file);
  conn->send(SharedBuffer::copy_of(std::string_view(head)));
  ASSERT_TRUE(conn->send_file(file));
  EXPECT_FALSE(conn->send_file(file_of("second"))) << "one pending file at a time";
  EXPECT_EQ(conn->queued_bytes(), head.size() + body.size());
  event_base_loop(base.get(), EVLOOP_NONBLOCK);  // the first flush fills the socket
  EXPECT_GT(conn->queued_bytes(), 0u);
  EXPECT_EQ(rec.drains, 0u) << "drained before the file was out";
  std::string got;
  ASSERT_TRUE(run_until([&] { return got.size() >= head.size() + body.size() && rec.drains > 0; }, 10000,
                        [&] { drain_peer(got, 3000); }));
  EXPECT_EQ(got, head + body);
  EXPECT_EQ(conn->queued_bytes(), 0u);
  EXPECT_EQ(conn->bytes_out(), head.size() + body.size());
  EXPECT_EQ(rec.drains, 1u);
  EXPECT_EQ(file.use_count(), 1) << "the connection let go of the file";
  // The connection goes on as before: more bytes, another file.
  conn->send(SharedBuffer::copy_of(std::string_view("next")));
  ASSERT_TRUE(run_until([&] { drain_peer(got); return got.size() == head.size() + body.size() + 4; }));
  ASSERT_TRUE(conn->send_file(file));
  ASSERT_TRUE(run_until([&] { drain_peer(got); return got.size() == head.size() + 2 * body.size() + 4; }, 10000));
  EXPECT_EQ(got.substr(head.size() + body.size() + 4), body);
}

TEST_P(ConnectionTest, CloseAfterFlushWaitsForThePendingFile) {
  conn = plain();
  conn->start(rec);
  const std::string body = pattern(1 << 20, 5);
  conn->send(SharedBuffer::copy_of(std::string_view("head;")));
  ASSERT_TRUE(conn->send_file(file_of(body)));
  conn->close_after_flush("answered");
  std::string got;
  bool open = true;
  ASSERT_TRUE(run_until([&] { return !open; }, 5000, [&] { open = drain_peer(got); }));
  EXPECT_EQ(got, "head;" + body);
  EXPECT_EQ(rec.closes, std::vector<std::string>{"answered"});
}

TEST_P(ConnectionTest, AFileToAClosedPeerIsAnError) {
  // sendfile(2) has no MSG_NOSIGNAL: the worker ignores SIGPIPE (process/signals.cpp), as here.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &old), 0);
  conn = plain();
  conn->start(rec);
  peer.reset();
  ASSERT_TRUE(conn->send_file(file_of(pattern(300000))));
  ASSERT_TRUE(run_until([&] { return !rec.closes.empty(); }));
  ::sigaction(SIGPIPE, &old, nullptr);
  EXPECT_EQ(rec.closes.size(), 1u);
  EXPECT_TRUE(rec.closes[0] == "peer closed" || rec.closes[0].rfind("write: ", 0) == 0) << rec.closes[0];
  EXPECT_EQ(conn->queued_bytes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(SendMethod, ConnectionTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "io_uring" : "sendmsg"; });

// ---------------------------------------------------------------- connect_unix

TEST(ConnectUnix, ConnectsNonBlockingCloseOnExecOrSaysWhyWithThePath) {
  std::string error;
  EXPECT_FALSE(connect_unix("/nonexistent/rill-test.sock", &error));
  EXPECT_EQ(error, "connect to /nonexistent/rill-test.sock: No such file or directory");
  EXPECT_FALSE(connect_unix("/tmp/" + std::string(200, 'x'), &error));
  EXPECT_NE(error.find("too long"), std::string::npos);

  const std::string path = testing::TempDir() + "rill-connect-" + std::to_string(::getpid()) + ".sock";
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM, 0));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  ::unlink(path.c_str());
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  UniqueFd fd = connect_unix(path, &error);
  ASSERT_TRUE(fd) << error;
  EXPECT_TRUE(::fcntl(fd.get(), F_GETFL) & O_NONBLOCK);
  EXPECT_TRUE(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC);
  ::unlink(path.c_str());
}

// ---------------------------------------------------------------- TLS

// A throwaway self-signed certificate for "localhost" (EC P-256) in a temporary directory.
struct TestCert {
  std::string dir, cert, key;
  explicit TestCert(const std::string& tag = "a") {
    dir = testing::TempDir() + "rill-tls-" + std::to_string(::getpid()) + "-" + tag;
    std::filesystem::create_directories(dir);
    cert = dir + "/cert.pem";
    key = dir + "/key.pem";
    EVP_PKEY* pkey = EVP_EC_gen("P-256");
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, pkey);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, nullptr, nullptr, 0);
    X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, "DNS:localhost");
    X509_add_ext(x, san, -1);
    X509_EXTENSION_free(san);
    X509_sign(x, pkey, EVP_sha256());
    FILE* f = std::fopen(cert.c_str(), "w");
    PEM_write_X509(f, x);
    std::fclose(f);
    f = std::fopen(key.c_str(), "w");
    PEM_write_PrivateKey(f, pkey, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    X509_free(x);
    EVP_PKEY_free(pkey);
  }
  ~TestCert() { std::filesystem::remove_all(dir); }
};

class TlsTest : public ConnectionFixture {
 protected:
  // `conn` is the server on one end, `other` the client on the other.
  void pair(const std::string& server_name = "localhost") {
    auto server = TlsContext::server(cert.cert, cert.key);
    auto client = TlsContext::client(cert.cert);
    conn = std::make_unique<TlsConnection>(base.get(), flusher, std::move(ours), "client", server);
    other = std::make_unique<TlsConnection>(base.get(), flusher, std::move(peer), "server", client, server_name);
  }
  TestCert cert;
  Recorder client_rec;
};

TEST_F(TlsTest, HandshakeBothDirectionsAndClose) {
  pair();
  other->send(SharedBuffer::copy_of(std::string_view("hello over tls")));  // waits for the handshake
  conn->start(rec);
  other->start(client_rec);
  ASSERT_TRUE(run_until([&] { return rec.data == "hello over tls"; })) << (rec.closes.empty() ? "" : rec.closes[0]);
  EXPECT_TRUE(conn->secure());
  EXPECT_TRUE(static_cast<TlsConnection&>(*conn).handshake_done());
  EXPECT_FALSE(conn->send_file(file_of("a file"))) << "TLS sends bytes, not files: the caller queues them";
  // The other way, more than one record, in many shared buffers.
  std::string expected;
  for (size_t i = 0; i < 300; ++i) {
    const std::string s = pattern(1000 + i, i);
    conn->send(SharedBuffer::copy_of(std::string_view(s)));
    expected += s;
  }
  ASSERT_TRUE(run_until([&] { return client_rec.data.size() >= expected.size(); }));
  EXPECT_EQ(client_rec.data, expected);
  EXPECT_EQ(conn->bytes_out(), expected.size());
  EXPECT_EQ(other->bytes_in(), expected.size());
  conn->close_after_flush("done");
  ASSERT_TRUE(run_until([&] { return !rec.closes.empty() && !client_rec.closes.empty(); }));
  EXPECT_EQ(rec.closes, std::vector<std::string>{"done"});
  EXPECT_EQ(client_rec.closes, std::vector<std::string>{"peer closed"});  // close_notify
}

TEST_F(TlsTest, LargeTransferThroughATinySocketBuffer) {
  const int small = 4096;
  ::setsockopt(ours.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  ::setsockopt(peer.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  pair();
  conn->start(rec);
  other->start(client_rec);
  std::string expected;
  for (size_t i = 0; i < 16; ++i) {
    const std::string s = pattern(128 * 1024 + i, i);
    conn->send(SharedBuffer::copy_of(std::string_view(s)));
    expected += s;
  }
  ASSERT_TRUE(run_until([&] { return client_rec.data.size() >= expected.size(); }, 15000));
  EXPECT_EQ(client_rec.data, expected);
  EXPECT_EQ(conn->queued_bytes(), 0u);
  EXPECT_TRUE(rec.closes.empty());
}

TEST_F(TlsTest, WrongServerNameFailsTheHandshakeWithTheReason) {
  pair("other.example");
  conn->start(rec);
  other->start(client_rec);
  ASSERT_TRUE(run_until([&] { return !client_rec.closes.empty() && !rec.closes.empty(); }));
  EXPECT_EQ(client_rec.closes[0].rfind("tls handshake: ", 0), 0u) << client_rec.closes[0];
  EXPECT_NE(client_rec.closes[0].find("certificate verify failed"), std::string::npos) << client_rec.closes[0];
}

TEST_F(TlsTest, PlainBytesInsteadOfAHandshake) {
  conn = std::make_unique<TlsConnection>(base.get(), flusher, std::move(ours), "client", TlsContext::server(cert.cert, cert.key));
  conn->start(rec);
  write_peer("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(run_until([&] { return !rec.closes.empty(); }));
  EXPECT_EQ(rec.closes[0].rfind("tls handshake: ", 0), 0u) << rec.closes[0];
  EXPECT_EQ(rec.data, "");
}

TEST_F(TlsTest, ContextErrorsNameTheFileAndTheReason) {
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const TlsError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { TlsContext::server(cert.dir + "/missing.pem", cert.key); }),
            "tls: cannot load certificate chain '" + cert.dir + "/missing.pem': No such file or directory");
  EXPECT_EQ(message([&] { TlsContext::server(cert.cert, cert.dir + "/missing.pem"); }),
            "tls: cannot load private key '" + cert.dir + "/missing.pem': No such file or directory");
  EXPECT_NE(message([&] { TlsContext::server(cert.key, cert.key); }).find("cannot load certificate chain '" + cert.key + "': "),
            std::string::npos);
  const TestCert another("b");
  EXPECT_EQ(message([&] { TlsContext::server(cert.cert, another.key); }),
            "tls: private key '" + another.key + "' does not match certificate '" + cert.cert + "'");
  EXPECT_EQ(message([&] { TlsContext::client(cert.dir + "/none.pem"); }),
            "tls: cannot load CA file '" + cert.dir + "/none.pem': No such file or directory");
}

}  // namespace
}  // namespace rill::net
