#pragma once
// The listening sockets, owned by the master.
//
// For every rtmp.listen / http.listen address the master binds one socket PER WORKER SLOT, all
// with SO_REUSEPORT, so the kernel spreads incoming connections over the slots (no thundering
// herd, no accept mutex). The master keeps every socket for its whole life:
//  - a respawned worker inherits its slot's socket: connections queued while it was down wait
//    in that socket's accept queue instead of being refused;
//  - a reload reuses the sockets of unchanged addresses (nothing is ever refused during a
//    reload), binds new addresses and closes removed ones.
#include <spdlog/logger.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rill/config/config.h"
#include "rill/net/acceptor.h"
#include "rill/process/upgrade_handoff.h"

namespace rill::process {

inline constexpr int kListenBacklog = 4096;

enum class ListenerKind { rtmp, http, rtmps, https, api, api_tls };
const char* to_string(ListenerKind kind);

// Bind one listening socket: SO_REUSEADDR + SO_REUSEPORT (+ IPV6_V6ONLY for IPv6),
// non-blocking, close-on-exec, listen(backlog). Throws std::runtime_error
// ("cannot listen on 127.0.0.1:1935: Address already in use").
int bind_listener(const config::ListenAddress& addr, int backlog = kListenBacklog);

// Fails (throws as above) when ADDR is already taken by any socket, even a SO_REUSEPORT one
// of the same user (another rill instance would otherwise silently share the port).
void check_address_free(const config::ListenAddress& addr);

// The local port a socket is bound to.
uint16_t bound_port(int fd);

// Raise /proc/sys/net/core/somaxconn to at least `wanted` where writable; failures are logged
// at debug level and otherwise ignored (the kernel caps listen()'s backlog at somaxconn).
void raise_somaxconn(int wanted, spdlog::logger& log);

class Listeners {
 public:
  Listeners() = default;
  ~Listeners();
  Listeners(const Listeners&) = delete;
  Listeners& operator=(const Listeners&) = delete;

  // Make the socket set match CFG with `slots` sockets per address: keep unchanged addresses,
  // bind new ones (and new slots), close removed addresses and slots >= `slots`.
  // Transactional: on failure nothing changes and std::runtime_error is thrown.
  void reconcile(const config::Config& cfg, uint32_t slots, spdlog::logger& log);

  // A new master after a binary upgrade, before its first reconcile: take over the sockets the
  // old master handed over (upgrade_handoff.h) whose kind and address CFG still has, so that
  // reconcile keeps them as a reload would (no connection refused); close the others. Returns
  // the count of sockets taken over.
  size_t adopt(const config::Config& cfg, const std::vector<InheritedListener>& inherited,
               spdlog::logger& log);
  // What a binary upgrade hands over: every address with its sockets, one per slot.
  std::vector<InheritedListener> handed_over() const;

  // Slot's sockets, in the order of rtmp.listen / http.listen.
  std::vector<int> fds(ListenerKind kind, uint32_t slot) const;
  // Everything the slot's worker serves, as the worker takes it (what, plain or TLS, the fd).
  std::vector<net::ListenSocket> for_slot(uint32_t slot) const;
  std::vector<int> all_fds() const;
  size_t socket_count() const;

  // In a forked worker: close every socket that does not belong to `slot`.
  void close_except_slot(uint32_t slot);
  void close_all();

 private:
  struct Entry {
    ListenerKind kind;
    config::ListenAddress addr;  // as configured (port may be 0: then all slots share the port
                                 // the first socket got)
    std::vector<int> fds;        // one per slot
  };
  std::vector<Entry> entries_;
};

}  // namespace rill::process
