#include "rill/server/session_address_limit.h"

namespace rill::server {

// The observer lives as long as the session set: both belong to the worker, which destroys this
// limit only after closing every session.
SessionAddressLimit::SessionAddressLimit(net::SessionSet& sessions) {
  sessions.add_retire_observer([this](net::Session& s) {
    auto it = address_of_.find(s.id());
    if (it == address_of_.end()) return;
    counter_.release(it->second);
    address_of_.erase(it);
  });
}

bool SessionAddressLimit::try_take(const std::string& peer, size_t limit) {
  return counter_.acquire(core::address_part(peer), limit);
}

void SessionAddressLimit::bind(const net::Session& s, const std::string& peer) {
  address_of_.emplace(s.id(), core::address_part(peer));
}

}  // namespace rill::server
