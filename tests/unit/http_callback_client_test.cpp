// http::HttpCallbackClient with the worker's resolver: a callback URL's host name from a private
// hosts file, each address tried in order (127.0.0.2 refuses, 127.0.0.1 answers), errors that
// name what was tried, a backend that connected but answers slowly keeps the whole timeout, and
// the Host header carries the port. The backend is libevent's HTTP server on 127.0.0.1.
#include "rill/http/http_callback_client.h"

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "rill/net/resolver.h"

namespace rill::http {
namespace {

struct Answer {
  int status = -1;
  std::string location;
  std::string failure;
};

class CallbackClientTest : public ::testing::Test {
 protected:
  CallbackClientTest() : base_(event_base_new()) {
    dir_ = std::filesystem::temp_directory_path() / ("rill-callback-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    files_.hosts = (dir_ / "hosts").string();
    std::ofstream(files_.hosts) << "127.0.0.2 hooks.rill.test\n127.0.0.1 hooks.rill.test slow.rill.test\n"
                                << "127.0.0.2 slow.rill.test\n";
    files_.resolv_conf = (dir_ / "resolv.conf").string();
    std::ofstream(files_.resolv_conf) << "search rill.test\n";  // no nameserver: nothing asked here
    http_ = evhttp_new(base_);
    evhttp_bound_socket* bound = evhttp_bind_socket_with_handle(http_, "127.0.0.1", 0);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(evhttp_bound_socket_get_fd(bound), reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    evhttp_set_gencb(http_, &CallbackClientTest::on_request, this);
  }
  ~CallbackClientTest() override {
    if (held_) evhttp_send_reply(held_, 200, "OK", nullptr);
    evhttp_free(http_);
    event_base_free(base_);
    std::filesystem::remove_all(dir_);
  }

  // Answers 302 with the Host it got as the Location; "/slow" answers after 300 ms.
  static void on_request(evhttp_request* req, void* arg) {
    auto* self = static_cast<CallbackClientTest*>(arg);
    ++self->requests_;
    const char* host = evhttp_find_header(evhttp_request_get_input_headers(req), "Host");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Location", host ? host : "");
    if (std::string(evhttp_request_get_uri(req)) != "/slow")
      return evhttp_send_reply(req, 302, "Found", nullptr);
    self->held_ = req;
    const timeval later{0, 300'000};
    event_base_once(
        self->base_, -1, EV_TIMEOUT,
        [](int, short, void* a) {
          auto* t = static_cast<CallbackClientTest*>(a);
          evhttp_send_reply(std::exchange(t->held_, nullptr), 302, "Found", nullptr);
        },
        self, &later);
  }

  Answer post(HttpCallbackClient& client, const std::string& url, int timeout_ms = 2000,
              const std::string& tls_ca_file = {}) {
    std::optional<Answer> got;
    client.post(
        url, "call=publish", std::chrono::milliseconds(timeout_ms),
        [&](int status, std::string location, std::string failure) {
          got = Answer{status, std::move(location), std::move(failure)};
        },
        tls_ca_file);
    EXPECT_FALSE(got) << "answered inside post()";
    for (int i = 0; i < 1000 && !got; ++i) {
      timeval tv{0, 5'000};
      event_base_loopexit(base_, &tv);
      event_base_dispatch(base_);
    }
    EXPECT_TRUE(got) << "no answer from " << url;
    return got.value_or(Answer{});
  }

  event_base* base_;
  std::filesystem::path dir_;
  net::Resolver::Files files_;
  evhttp* http_ = nullptr;
  evhttp_request* held_ = nullptr;
  uint16_t port_ = 0;
  int requests_ = 0;
};

TEST_F(CallbackClientTest, AHostNameTriesEachAddressAndSendsItsPort) {
  net::Resolver resolver(base_, files_);
  HttpCallbackClient client(base_, &resolver);
  const std::string hostport = "hooks.rill.test:" + std::to_string(port_);
  Answer a = post(client, "http://" + hostport + "/auth");
  EXPECT_EQ(a.failure, "");
  EXPECT_EQ(a.status, 302);
  EXPECT_EQ(a.location, hostport) << "the Host header";
  EXPECT_EQ(requests_, 1) << "127.0.0.2 refused the connection: nothing was sent there";
}

TEST_F(CallbackClientTest, ASlowBackendThatConnectedKeepsTheTimeout) {
  net::Resolver resolver(base_, files_);
  HttpCallbackClient client(base_, &resolver);
  // 2 addresses, 500 ms: 127.0.0.1 gets 250 ms, connects and answers after 300 ms; 127.0.0.2
  // is never tried (it would refuse).
  Answer a = post(client, "http://slow.rill.test:" + std::to_string(port_) + "/slow", 500);
  EXPECT_EQ(a.failure, "");
  EXPECT_EQ(a.status, 302);
  EXPECT_EQ(requests_, 1);
}

TEST_F(CallbackClientTest, ErrorsNameWhatWasTried) {
  net::Resolver resolver(base_, files_);
  HttpCallbackClient client(base_, &resolver);
  const std::string closed = std::to_string(port_ == 65535 ? 1 : port_ + 1);  // nobody listens there
  EXPECT_EQ(post(client, "http://hooks.rill.test:" + closed + "/auth").failure,
            "cannot connect to hooks.rill.test:" + closed +
                ": 127.0.0.2: connection failed; 127.0.0.1: connection failed");
  EXPECT_EQ(post(client, "http://hooks.invalid/auth").failure,
            "cannot resolve hooks.invalid: no such host (a .invalid name, RFC 6761)");
  EXPECT_EQ(post(client, "nonsense").failure, "bad URL nonsense");
}

TEST_F(CallbackClientTest, WithoutAResolverAddressesOnly) {
  HttpCallbackClient client(base_, nullptr);
  EXPECT_EQ(post(client, "http://127.0.0.1:" + std::to_string(port_) + "/auth").status, 302);
  EXPECT_EQ(post(client, "http://hooks.rill.test:" + std::to_string(port_) + "/auth").failure,
            "cannot resolve hooks.rill.test: no resolver here");
}

// https:// to a plain HTTP server: the TLS handshake fails, and says so; a CA file that cannot be
// read fails the call with its name (tests/integration/test_relays_tls.py: certificates).
TEST_F(CallbackClientTest, HttpsErrors) {
  HttpCallbackClient client(base_, nullptr);
  const std::string url = "https://127.0.0.1:" + std::to_string(port_) + "/auth";
  const Answer plain = post(client, url);
  EXPECT_EQ(plain.status, 0);
  EXPECT_EQ(
      plain.failure.rfind("cannot connect to 127.0.0.1:" + std::to_string(port_) + ": 127.0.0.1: tls: ", 0),
      0u)
      << plain.failure;
  const Answer no_ca = post(client, url, 2000, "/nonexistent/ca.pem");
  EXPECT_EQ(no_ca.failure, "tls: cannot load CA file '/nonexistent/ca.pem': No such file or directory");
}

TEST_F(CallbackClientTest, DestroyedWithCallsPendingNoCallback) {
  net::Resolver resolver(base_, files_);
  int calls = 0;
  {
    HttpCallbackClient client(base_, &resolver);
    client.post("http://hooks.rill.test:" + std::to_string(port_) + "/slow", "", std::chrono::seconds(2),
                [&](int, std::string, std::string) { ++calls; });
    client.post("http://127.0.0.1:" + std::to_string(port_) + "/auth", "", std::chrono::seconds(2),
                [&](int, std::string, std::string) { ++calls; });
  }
  for (int i = 0; i < 20; ++i) {
    timeval tv{0, 5'000};
    event_base_loopexit(base_, &tv);
    event_base_dispatch(base_);
  }
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace rill::http
