#pragma once
// One outward TCP connection to HOST:PORT without blocking the loop: the host resolved by the
// worker's Resolver (a numeric address directly), then each address tried in order, IPv4 and
// IPv6 as the answer lists them, until one connects, the whole attempt within one timeout. An
// address gets an equal share of the time left (the last one all of it), so one that never
// answers does not use up the time of the next. Every start() resolves again: nothing is cached.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rill/net/resolver.h"
#include "rill/net/socket.h"

struct event_base;

namespace rill::net {

class TcpConnector {
 public:
  struct Result {
    UniqueFd fd;          // connected (non-blocking, close-on-exec, TCP_NODELAY); empty on failure
    std::string address;  // the address it connected to ("127.0.0.1", "::1")
    std::string skipped;  // addresses that failed before it, and why ("127.0.0.2: Connection refused")
    // On failure: "connect to HOST:PORT: " and why — the lookup's error, or each address tried
    // and how it failed ("127.0.0.2: Connection refused; ::1: Connection refused"), or the timeout.
    std::string error;
  };
  using Done = std::function<void(Result)>;

  // `resolver` null: numeric addresses only (a host name fails, saying so).
  TcpConnector(event_base* base, Resolver* resolver) : base_(base), resolver_(resolver) {}
  ~TcpConnector() { cancel(); }  // an attempt in progress ends without its callback
  TcpConnector(const TcpConnector&) = delete;
  TcpConnector& operator=(const TcpConnector&) = delete;

  // `done` runs exactly once, from the event loop (never inside start()), unless cancelled or
  // destroyed first; it may destroy the connector. A start() while active cancels the attempt.
  void start(const std::string& host, uint16_t port, std::chrono::milliseconds timeout, Done done);
  void cancel();
  bool active() const { return static_cast<bool>(done_); }

 private:
  static void on_resolved_now(int, short, void* arg);
  static void on_writable(int fd, short what, void* arg);
  static void on_deadline(int, short, void* arg);
  void resolved(Resolution r);
  void try_next();
  void fail(const std::string& why);
  void finish(Result r);
  std::string tried() const;  // the failures so far, "; "-joined

  event_base* base_;
  Resolver* resolver_;
  std::string host_;
  uint16_t port_ = 0;
  bool numeric_host_ = false;  // errors then name no address: it is the host
  std::chrono::milliseconds timeout_{0};
  std::chrono::steady_clock::time_point deadline_;
  Done done_;
  std::optional<Resolver::LookupId> lookup_;
  Resolution numeric_;  // without a resolver: the answer, handed over from the loop
  std::vector<ResolvedAddress> addresses_;
  size_t next_ = 0;
  std::string current_;  // the address being tried
  std::vector<std::string> failures_;
  UniqueFd fd_;
  EventPtr attempt_ev_;
  EventPtr deadline_ev_;
  EventPtr step_ev_;
};

}  // namespace rill::net
