#include "rill/core/address_counter.h"

namespace rill::core {

std::string address_part(std::string_view peer) {
  if (!peer.empty() && peer.front() == '[') {
    const size_t close = peer.find(']');
    if (close != std::string_view::npos) return std::string(peer.substr(1, close - 1));
  }
  const size_t colon = peer.rfind(':');
  if (colon != std::string_view::npos && peer.find(':') == colon) return std::string(peer.substr(0, colon));
  return std::string(peer);
}

bool AddressCounter::acquire(const std::string& addr, size_t limit) {
  size_t& n = counts_[addr];
  if (limit > 0 && n >= limit) {
    if (n == 0) counts_.erase(addr);
    return false;
  }
  ++n;
  return true;
}

void AddressCounter::release(const std::string& addr) {
  auto it = counts_.find(addr);
  if (it == counts_.end()) return;
  if (--it->second == 0) counts_.erase(it);
}

size_t AddressCounter::count(const std::string& addr) const {
  auto it = counts_.find(addr);
  return it == counts_.end() ? 0 : it->second;
}

}  // namespace rill::core
