#pragma once
// Access rules: nginx-rtmp's allow/deny, one rule per line, first match wins, and everything is
// allowed when no rule matches (nginx-rtmp's default). A rule reads
//
//   allow|deny  publish|play  all | ADDRESS | ADDRESS/PREFIX
//
// with ADDRESS an IPv4 or IPv6 address ("10.0.0.0/8", "::1", "fd00::/8"). Pure: addresses are
// parsed with inet_pton, no socket is touched.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rill::core {

enum class AccessAction { Publish, Play };

// An IPv4 (family 4, first 4 bytes used) or IPv6 (family 6) address.
struct IpAddress {
  int family = 0;
  std::array<uint8_t, 16> bytes{};
  bool operator==(const IpAddress&) const = default;
};

// "1.2.3.4", "::1", and the peer forms "1.2.3.4:5678" / "[::1]:5678"; nullopt otherwise.
std::optional<IpAddress> parse_ip(std::string_view text);
std::optional<IpAddress> parse_peer_ip(std::string_view peer);

struct AccessRule {
  bool allow = true;
  AccessAction action = AccessAction::Publish;
  bool all = false;   // matches every address
  IpAddress network;  // the address with the host bits cleared
  int prefix = 0;     // 0..32 (v4), 0..128 (v6)
  std::string text;   // as written, for logs and messages
  bool operator==(const AccessRule&) const = default;

  bool matches(AccessAction a, const IpAddress& ip) const;
};

// Parses one rule; on a malformed one returns nullopt and sets *why.
std::optional<AccessRule> parse_access_rule(std::string_view text, std::string* why);

// The first rule matching (action, ip), or null when none does (then: allowed).
const AccessRule* first_matching_rule(const std::vector<AccessRule>& rules, AccessAction action, const IpAddress& ip);

// Allowed under `rules`? A peer without an IP address (e.g. "unix") is matched by "all" rules only.
bool access_allowed(const std::vector<AccessRule>& rules, AccessAction action, std::string_view peer,
                    const AccessRule** decided_by = nullptr);

}  // namespace rill::core
