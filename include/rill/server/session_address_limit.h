#pragma once
// rtmp.max_connections_per_ip: counts a worker's RTMP sessions per client address; a session's
// slot is given back when the session set retires it.
#include <cstdint>
#include <string>
#include <unordered_map>

#include "rill/core/address_counter.h"
#include "rill/net/worker_core.h"

namespace rill::server {

class SessionAddressLimit {
 public:
  explicit SessionAddressLimit(net::SessionSet& sessions);
  // Takes a slot for a connection from `peer` ("addr:port"); false when `limit` (> 0) slots of its
  // address are taken. A taken slot must be bound to the session made for it.
  bool try_take(const std::string& peer, size_t limit);
  void bind(const net::Session& s, const std::string& peer);

 private:
  core::AddressCounter counter_;
  std::unordered_map<uint64_t, std::string> address_of_;  // by session id
};

}  // namespace rill::server
