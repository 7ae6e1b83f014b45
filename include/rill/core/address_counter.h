#pragma once
// Connections per client address, for rtmp.max_connections_per_ip and http.max_connections_per_ip:
// one address may hold at most N connections of a worker at once (a flood from one host then
// costs only that host's slots).
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rill::core {

// "1.2.3.4:5678" -> "1.2.3.4", "[::1]:5678" -> "::1"; anything else as it is.
std::string address_part(std::string_view peer);

class AddressCounter {
 public:
  // Counts one more connection from `addr`, unless `limit` > 0 are already counted: false, not counted.
  bool acquire(const std::string& addr, size_t limit);
  void release(const std::string& addr);
  size_t count(const std::string& addr) const;
  size_t addresses() const { return counts_.size(); }

 private:
  std::unordered_map<std::string, size_t> counts_;
};

}  // namespace rill::core
