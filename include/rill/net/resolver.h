#pragma once
// Host names to addresses without blocking a worker's loop: one Resolver per worker event_base
// (built by server::Worker and handed to whoever connects out), on libevent's evdns. A name is
// looked up in the hosts file first, then asked of the nameservers of resolv.conf; both files are
// read once, when the resolver is built (a worker's start: a reload starts new workers). Nothing
// is cached: every lookup asks again, so a reconnect follows a changed DNS answer.
//
// Numeric addresses are answered without evdns; a name under `.invalid` fails without a query
// (RFC 6761). A resolv.conf without a nameserver leaves 127.0.0.1 as the nameserver, as glibc does.
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

struct event_base;

namespace rill::net {

struct ResolvedAddress {
  sockaddr_storage addr{};  // with the port
  socklen_t len = 0;
  std::string text() const;  // "127.0.0.1", "::1"
};

struct Resolution {
  std::vector<ResolvedAddress> addresses;  // in the order to try (hosts file or DNS order); empty on failure
  std::string error;                       // why not ("no such host", ...); empty on success
};

class Resolver {
 public:
  struct Files {
    std::string resolv_conf = "/etc/resolv.conf";
    std::string hosts = "/etc/hosts";
  };
  using Done = std::function<void(Resolution)>;
  using LookupId = uint64_t;

  explicit Resolver(event_base* base);  // the machine's files
  Resolver(event_base* base, const Files& files);
  // Pending lookups end without their callbacks. The resolver outlives its users.
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // What reading the files found worth a log line ("" when nothing), e.g. that resolv.conf names
  // no nameserver.
  const std::string& setup_note() const { return note_; }

  // `done` runs exactly once, always from the event loop (never inside resolve()), unless the
  // lookup is cancelled or the resolver destroyed first. `host` may be an IPv6 address in [].
  LookupId resolve(const std::string& host, uint16_t port, Done done);
  // Ends a pending lookup without its callback; an unknown or finished id is ignored.
  void cancel(LookupId id);
  size_t pending() const;

  // The address when `host` is a numeric IPv4 or IPv6 address (brackets allowed), else nothing.
  static std::optional<ResolvedAddress> numeric(const std::string& host, uint16_t port);

  struct Shared;  // internal: what libevent's callbacks may still reach after the resolver is gone
  struct Query;   // internal

 private:
  static void drop(Query* q);  // a lookup nobody waits for any more
  Shared* shared_;
  std::string note_;
};

}  // namespace rill::net
