#pragma once
// OriginHealth: the upstreams this worker recently failed to reach, remembered for a while so
// that a new pull right after a failover starts with an origin that works instead of waiting on
// the dead one first (SRS's plain round-robin costs a new player 3 s there).
#include <cstdint>
#include <map>
#include <string>

namespace rill::cluster {

class OriginHealth {
 public:
  explicit OriginHealth(int64_t remember_ms = 10'000) : remember_ms_(remember_ms) {}
  void failed(const std::string& url, int64_t now_ms) { failed_at_[url] = now_ms; }
  void succeeded(const std::string& url) { failed_at_.erase(url); }
  // Failed within the memory window.
  bool recently_failed(const std::string& url, int64_t now_ms) const {
    auto it = failed_at_.find(url);
    return it != failed_at_.end() && now_ms - it->second < remember_ms_;
  }

 private:
  int64_t remember_ms_;
  std::map<std::string, int64_t> failed_at_;
};

}  // namespace rill::cluster
