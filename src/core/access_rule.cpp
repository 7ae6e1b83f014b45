#include "rill/core/access_rule.h"

#include <arpa/inet.h>

#include <cstring>

namespace rill::core {

namespace {

std::vector<std::string_view> words_of(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

// Clears the bits after `prefix`.
IpAddress masked(IpAddress ip, int prefix) {
  const int bits = ip.family == 4 ? 32 : 128;
  for (int b = prefix; b < bits; ++b) ip.bytes[b / 8] &= static_cast<uint8_t>(~(0x80u >> (b % 8)));
  return ip;
}

std::optional<int> parse_prefix(std::string_view text, int max) {
  if (text.empty() || text.size() > 3) return std::nullopt;
  int v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

}  // namespace

std::optional<IpAddress> parse_ip(std::string_view text) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  char buf[INET6_ADDRSTRLEN] = {};
  std::memcpy(buf, text.data(), text.size());
  IpAddress ip;
  if (inet_pton(AF_INET, buf, ip.bytes.data()) == 1) {
    ip.family = 4;
    return ip;
  }
  if (inet_pton(AF_INET6, buf, ip.bytes.data()) == 1) {
    ip.family = 6;
    // An IPv4-mapped address (::ffff:a.b.c.d, a dual-stack socket) is its IPv4 address.
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(ip.bytes.data(), kMapped, 12) == 0) {
      IpAddress v4;
      v4.family = 4;
      std::memcpy(v4.bytes.data(), ip.bytes.data() + 12, 4);
      return v4;
    }
    return ip;
  }
  return std::nullopt;
}

std::optional<IpAddress> parse_peer_ip(std::string_view peer) {
  if (!peer.empty() && peer.front() == '[') {
    const size_t close = peer.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    return parse_ip(peer.substr(1, close - 1));
  }
  const size_t colon = peer.find(':');
  if (colon != std::string_view::npos && peer.find(':', colon + 1) == std::string_view::npos) {
    return parse_ip(peer.substr(0, colon));  // "a.b.c.d:port"
  }
  return parse_ip(peer);
}

bool AccessRule::matches(AccessAction a, const IpAddress& ip) const {
  if (a != action) return false;
  if (all) return true;
  return ip.family == network.family && masked(ip, prefix) == network;
}

std::optional<AccessRule> parse_access_rule(std::string_view text, std::string* why) {
  auto fail = [why](std::string message) -> std::optional<AccessRule> {
    if (why) *why = std::move(message);
    return std::nullopt;
  };
  const auto words = words_of(text);
  if (words.size() != 3) return fail("expected 'allow|deny publish|play all|ADDRESS[/PREFIX]'");
  AccessRule rule;
  rule.text = std::string(text);
  if (words[0] == "allow") rule.allow = true;
  else if (words[0] == "deny") rule.allow = false;
  else return fail("expected allow or deny, got '" + std::string(words[0]) + "'");
  if (words[1] == "publish") rule.action = AccessAction::Publish;
  else if (words[1] == "play") rule.action = AccessAction::Play;
  else return fail("expected publish or play, got '" + std::string(words[1]) + "'");
  const std::string_view target = words[2];
  if (target == "all") {
    rule.all = true;
    return rule;
  }
  const size_t slash = target.find('/');
  auto ip = parse_ip(target.substr(0, slash));
  if (!ip) return fail("expected all or an IPv4/IPv6 address, got '" + std::string(target) + "'");
  const int bits = ip->family == 4 ? 32 : 128;
  rule.prefix = bits;
  if (slash != std::string_view::npos) {
    auto prefix = parse_prefix(target.substr(slash + 1), bits);
    if (!prefix) return fail("expected a prefix length from 0 to " + std::to_string(bits) + " in '" + std::string(target) + "'");
    rule.prefix = *prefix;
  }
  rule.network = masked(*ip, rule.prefix);
  return rule;
}

const AccessRule* first_matching_rule(const std::vector<AccessRule>& rules, AccessAction action, const IpAddress& ip) {
  for (const AccessRule& r : rules) {
    if (r.matches(action, ip)) return &r;
  }
  return nullptr;
}

bool access_allowed(const std::vector<AccessRule>& rules, AccessAction action, std::string_view peer,
                    const AccessRule** decided_by) {
  const AccessRule* rule = nullptr;
  if (auto ip = parse_peer_ip(peer)) {
    rule = first_matching_rule(rules, action, *ip);
  } else {
    // No address (a Unix socket): only an "all" rule can match it.
    for (const AccessRule& r : rules) {
      if (r.action == action && r.all) {
        rule = &r;
        break;
      }
    }
  }
  if (decided_by) *decided_by = rule;
  return rule == nullptr || rule->allow;
}

}  // namespace rill::core
