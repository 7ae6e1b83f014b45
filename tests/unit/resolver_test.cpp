// net::Resolver and net::TcpConnector on a real event_base, with a private hosts file and a
// private resolv.conf whose only nameserver is a libevent DNS server inside the test (on
// 127.0.0.1): numeric addresses skip the lookup, names come from the hosts file or the DNS
// server, unknown names fail with a clear error, cancelled lookups never call back, and the
// connector tries each address in order within one timeout. Nothing leaves the machine.
#include "rill/net/resolver.h"

#include <arpa/inet.h>
#include <event2/dns.h>
#include <event2/dns_struct.h>
#include <event2/event.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rill/net/socket.h"
#include "rill/net/tcp_connector.h"

namespace rill::net {
namespace {

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// A DNS server on 127.0.0.1 (UDP): A records from `names`, NXDOMAIN for other names, and no
// answer at all for "silent.test". Counts the questions it got.
class DnsServer {
 public:
  explicit DnsServer(event_base* base) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
      ADD_FAILURE() << "DNS server socket: " << std::strerror(errno);
    }
    port_ = ntohs(sa.sin_port);
    server_ = evdns_add_server_port_with_base(base, fd_, 0, &DnsServer::on_request, this);
  }
  ~DnsServer() {
    for (evdns_server_request* r : held_) evdns_server_request_drop(r);
    evdns_close_server_port(server_);
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  int questions() const { return questions_; }
  std::map<std::string, std::string> names;  // lower-case name -> IPv4 address

 private:
  static void on_request(evdns_server_request* req, void* arg) {
    auto* self = static_cast<DnsServer*>(arg);
    int err = DNS_ERR_NOTEXIST;
    for (int i = 0; i < req->nquestions; ++i) {
      ++self->questions_;
      std::string name = req->questions[i]->name;  // evdns asks in random case (the 0x20 hack)
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name == "silent.test") {
        self->held_.push_back(req);
        return;
      }
      auto it = self->names.find(name);
      if (it == self->names.end()) continue;
      err = DNS_ERR_NONE;
      if (req->questions[i]->type != EVDNS_TYPE_A) continue;  // AAAA: the name exists, no such record
      in_addr a{};
      ::inet_pton(AF_INET, it->second.c_str(), &a);
      evdns_server_request_add_a_reply(req, req->questions[i]->name, 1, &a, 10);
    }
    evdns_server_request_respond(req, err);
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  evdns_server_port* server_ = nullptr;
  std::vector<evdns_server_request*> held_;
  int questions_ = 0;
};

class ResolverTest : public ::testing::Test {
 protected:
  ResolverTest() : base_(event_base_new()), dns_(std::make_unique<DnsServer>(base_)) {
    dir_ = std::filesystem::temp_directory_path() /
           ("rill-resolver-test-" + std::to_string(::getpid()) + "-" + std::to_string(++counter_));
    std::filesystem::create_directories(dir_);
    files_.hosts = write("hosts",
                         "127.0.0.1 localhost\n"
                         "127.0.0.2 origin.rill.test\n"
                         "127.0.0.1 origin.rill.test\n"
                         "::1 origin.rill.test\n");
    files_.resolv_conf = write("resolv.conf", "nameserver 127.0.0.1:" + std::to_string(dns_->port()) +
                                                  "\noptions timeout:1 attempts:1\n");
    dns_->names["dns.rill.test"] = "127.0.0.3";
  }
  ~ResolverTest() override {
    dns_.reset();
    event_base_free(base_);
    std::filesystem::remove_all(dir_);
  }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // Runs the loop until pred() or `ms` milliseconds.
  template <class P>
  void run_until(P pred, int ms = 3000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!pred() && std::chrono::steady_clock::now() < end) {
      timeval tv{0, 5'000};
      event_base_loopexit(base_, &tv);
      event_base_dispatch(base_);
    }
  }
  void run_for(int ms) {
    run_until([] { return false; }, ms);
  }

  // One lookup, run to its answer.
  Resolution lookup(Resolver& r, const std::string& host, uint16_t port = 1935) {
    std::optional<Resolution> got;
    r.resolve(host, port, [&](Resolution res) { got = std::move(res); });
    EXPECT_FALSE(got) << "answered inside resolve()";
    run_until([&] { return got.has_value(); });
    EXPECT_TRUE(got) << "no answer for " << host;
    return got.value_or(Resolution{});
  }

  static std::vector<std::string> texts(const Resolution& r) {
    std::vector<std::string> out;
    for (const ResolvedAddress& a : r.addresses) out.push_back(a.text());
    return out;
  }

  static inline int counter_ = 0;
  event_base* base_;
  std::unique_ptr<DnsServer> dns_;
  std::filesystem::path dir_;
  Resolver::Files files_;
};

TEST_F(ResolverTest, NumericAddressesSkipTheLookup) {
  Resolver r(base_, files_);
  Resolution v4 = lookup(r, "127.0.0.1", 1935);
  ASSERT_TRUE(v4.error.empty()) << v4.error;
  ASSERT_EQ(texts(v4), std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(ntohs(reinterpret_cast<const sockaddr_in*>(&v4.addresses[0].addr)->sin_port), 1935);
  EXPECT_EQ(texts(lookup(r, "::1")), std::vector<std::string>{"::1"});
  EXPECT_EQ(texts(lookup(r, "[::1]")), std::vector<std::string>{"::1"});
  EXPECT_EQ(dns_->questions(), 0);
  EXPECT_FALSE(Resolver::numeric("localhost", 1));
  EXPECT_FALSE(Resolver::numeric("127.0.0.1.example", 1));
  EXPECT_EQ(r.pending(), 0u);
}

TEST_F(ResolverTest, NamesFromTheHostsFileInItsOrder) {
  Resolver r(base_, files_);
  EXPECT_EQ(r.setup_note(), "");
  Resolution res = lookup(r, "origin.rill.test");
  ASSERT_TRUE(res.error.empty()) << res.error;
  EXPECT_EQ(texts(res), (std::vector<std::string>{"127.0.0.2", "127.0.0.1", "::1"}));
  EXPECT_EQ(texts(lookup(r, "ORIGIN.rill.test")),
            (std::vector<std::string>{"127.0.0.2", "127.0.0.1", "::1"}));
  EXPECT_EQ(dns_->questions(), 0) << "a name in the hosts file needs no query";
}

TEST_F(ResolverTest, TheMachinesOwnFilesResolveLocalhost) {
  Resolver r(base_);  // /etc/resolv.conf and /etc/hosts: every Debian hosts file has localhost
  Resolution res = lookup(r, "localhost");
  ASSERT_TRUE(res.error.empty()) << res.error;
  const std::string first = res.addresses.at(0).text();
  EXPECT_TRUE(first == "127.0.0.1" || first == "::1") << first;
}

TEST_F(ResolverTest, NamesFromTheNameserver) {
  Resolver r(base_, files_);
  EXPECT_EQ(texts(lookup(r, "dns.rill.test")), std::vector<std::string>{"127.0.0.3"});
  const int asked = dns_->questions();
  EXPECT_GE(asked, 1);
  // Nothing is cached: the next lookup asks again.
  dns_->names["dns.rill.test"] = "127.0.0.4";
  EXPECT_EQ(texts(lookup(r, "dns.rill.test")), std::vector<std::string>{"127.0.0.4"});
  EXPECT_GT(dns_->questions(), asked);
}

TEST_F(ResolverTest, UnknownNamesFailClearly) {
  Resolver r(base_, files_);
  Resolution nx = lookup(r, "nowhere.rill.test");
  EXPECT_TRUE(nx.addresses.empty());
  EXPECT_EQ(nx.error, "no such host");
  // RFC 6761: .invalid never resolves, and nobody is asked.
  const int asked = dns_->questions();
  Resolution inv = lookup(r, "nowhere.invalid");
  EXPECT_HAS(inv.error, "no such host");
  EXPECT_HAS(inv.error, ".invalid");
  EXPECT_HAS(lookup(r, "Nowhere.INVALID.").error, "no such host");
  EXPECT_EQ(dns_->questions(), asked);
}

TEST_F(ResolverTest, WithoutANameserverTheHostsFileStillAnswers) {
  files_.resolv_conf = write("resolv.conf", "search rill.test\n");
  Resolver r(base_, files_);
  EXPECT_HAS(r.setup_note(), "no nameserver in " + files_.resolv_conf);
  EXPECT_EQ(texts(lookup(r, "origin.rill.test")).size(), 3u);
  EXPECT_TRUE(lookup(r, "x.invalid").addresses.empty());
}

TEST_F(ResolverTest, ACancelledLookupNeverCallsBack) {
  Resolver r(base_, files_);
  int calls = 0;
  Resolver::LookupId slow = r.resolve("silent.test", 80, [&](Resolution) { ++calls; });
  run_until([&] { return dns_->questions() > 0; });  // asked, never answered
  // Answers known at once (numeric, hosts file) wait for the loop: cancelled before it runs.
  Resolver::LookupId now = r.resolve("127.0.0.1", 80, [&](Resolution) { ++calls; });
  Resolver::LookupId hosts = r.resolve("origin.rill.test", 80, [&](Resolution) { ++calls; });
  EXPECT_EQ(r.pending(), 3u);
  r.cancel(slow);
  r.cancel(now);
  r.cancel(hosts);
  r.cancel(hosts);  // twice: ignored
  EXPECT_EQ(r.pending(), 0u);
  run_for(100);
  EXPECT_EQ(calls, 0);
}

TEST_F(ResolverTest, DestroyedWithLookupsPendingNoCallback) {
  int calls = 0;
  {
    Resolver r(base_, files_);
    r.resolve("silent.test", 80, [&](Resolution) { ++calls; });
    run_until([&] { return dns_->questions() > 0; });
    r.resolve("127.0.0.1", 80, [&](Resolution) { ++calls; });
    Resolver::LookupId cancelled = r.resolve("silent.test", 81, [&](Resolution) { ++calls; });
    r.cancel(cancelled);  // libevent still owes this one a callback when the resolver goes
  }
  run_for(100);  // the owed callbacks arrive, find nobody, free what is left
  EXPECT_EQ(calls, 0);
}

TEST_F(ResolverTest, ALookupPassesTheNameserverTimeout) {
  Resolver r(base_, files_);
  const auto t0 = std::chrono::steady_clock::now();
  Resolution res = lookup(r, "silent.test");
  EXPECT_EQ(res.error, "no answer from the nameservers");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

// A TCP listener on 127.0.0.1 (only: 127.0.0.2 refuses its port).
struct Listener {
  Listener() {
    fd = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    ::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    ::listen(fd.get(), 8);
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
  }
  UniqueFd fd;
  uint16_t port = 0;
};

class ConnectorTest : public ResolverTest {
 protected:
  TcpConnector::Result connect(TcpConnector& c, const std::string& host, uint16_t port,
                               int timeout_ms = 2000) {
    std::optional<TcpConnector::Result> got;
    c.start(host, port, std::chrono::milliseconds(timeout_ms),
            [&](TcpConnector::Result r) { got = std::move(r); });
    EXPECT_FALSE(got) << "answered inside start()";
    run_until([&] { return got.has_value(); }, timeout_ms + 2000);
    EXPECT_TRUE(got) << "no answer for " << host;
    return got ? std::move(*got) : TcpConnector::Result{};
  }
};

TEST_F(ConnectorTest, TriesEachAddressInOrder) {
  Resolver r(base_, files_);
  TcpConnector c(base_, &r);
  Listener l;
  TcpConnector::Result res = connect(c, "origin.rill.test", l.port);
  ASSERT_TRUE(res.fd) << res.error;
  EXPECT_EQ(res.address, "127.0.0.1");
  EXPECT_EQ(res.skipped, "127.0.0.2: Connection refused");
  EXPECT_EQ(connect_result(res.fd.get()), 0);
}

TEST_F(ConnectorTest, ErrorsNameTheHostAndEachAddressTried) {
  Resolver r(base_, files_);
  TcpConnector c(base_, &r);
  uint16_t closed_port = 0;
  {
    Listener l;  // a port nobody listens on once it is closed
    closed_port = l.port;
  }
  const std::string where = "connect to origin.rill.test:" + std::to_string(closed_port) + ": ";
  TcpConnector::Result res = connect(c, "origin.rill.test", closed_port);
  EXPECT_FALSE(res.fd);
  // ::1 too (refused, or the family unsupported on a machine without IPv6).
  EXPECT_EQ(res.error.rfind(where + "127.0.0.2: Connection refused; 127.0.0.1: Connection refused; ::1: ", 0),
            0u)
      << res.error;
  EXPECT_EQ(connect(c, "nowhere.invalid", 1935).error,
            "connect to nowhere.invalid:1935: cannot resolve nowhere.invalid: no such host (a .invalid name, "
            "RFC 6761)");
  EXPECT_EQ(connect(c, "127.0.0.1", closed_port).error,
            "connect to 127.0.0.1:" + std::to_string(closed_port) + ": Connection refused");
}

TEST_F(ConnectorTest, OneTimeoutCoversTheLookup) {
  Resolver r(base_, files_);
  TcpConnector c(base_, &r);
  const auto t0 = std::chrono::steady_clock::now();
  TcpConnector::Result res = connect(c, "silent.test", 1935, 200);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(res.error, "connect to silent.test:1935: timed out after 200 ms resolving silent.test");
  EXPECT_GE(took, std::chrono::milliseconds(190));
  EXPECT_LT(took, std::chrono::milliseconds(900));
  EXPECT_EQ(r.pending(), 0u) << "the lookup was cancelled";
}

TEST_F(ConnectorTest, WithoutAResolverNumericOnly) {
  TcpConnector c(base_, nullptr);
  Listener l;
  TcpConnector::Result ok = connect(c, "127.0.0.1", l.port);
  EXPECT_TRUE(ok.fd) << ok.error;
  EXPECT_HAS(connect(c, "origin.rill.test", l.port).error, "no resolver");
}

TEST_F(ConnectorTest, DestroyedOrCancelledMidAttemptNoCallback) {
  Resolver r(base_, files_);
  int calls = 0;
  {
    TcpConnector c(base_, &r);
    c.start("silent.test", 80, std::chrono::milliseconds(1000), [&](TcpConnector::Result) { ++calls; });
    run_until([&] { return dns_->questions() > 0; });
  }
  TcpConnector c(base_, &r);
  Listener l;
  c.start("origin.rill.test", l.port, std::chrono::milliseconds(1000),
          [&](TcpConnector::Result) { ++calls; });
  c.cancel();
  EXPECT_FALSE(c.active());
  run_for(150);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(r.pending(), 0u);
}

}  // namespace
}  // namespace rill::net
