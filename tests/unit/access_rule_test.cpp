#include "rill/core/access_rule.h"

#include <gtest/gtest.h>

using namespace rill::core;

namespace {

AccessRule rule(const char* text) {
  std::string why;
  auto r = parse_access_rule(text, &why);
  EXPECT_TRUE(r) << text << ": " << why;
  return r.value_or(AccessRule{});
}

std::string error_of(const char* text) {
  std::string why;
  EXPECT_FALSE(parse_access_rule(text, &why)) << text;
  return why;
}

}  // namespace

TEST(AccessRule, ParsesIpsAndPeers) {
  EXPECT_EQ(parse_ip("127.0.0.1")->family, 4);
  EXPECT_EQ(parse_ip("::1")->family, 6);
  EXPECT_EQ(parse_ip("::ffff:10.1.2.3"), parse_ip("10.1.2.3"));  // v4-mapped is v4
  EXPECT_FALSE(parse_ip("localhost"));
  EXPECT_FALSE(parse_ip(""));
  EXPECT_FALSE(parse_ip("1.2.3.4.5"));
  EXPECT_EQ(parse_peer_ip("10.0.0.7:1935"), parse_ip("10.0.0.7"));
  EXPECT_EQ(parse_peer_ip("[fd00::5]:80"), parse_ip("fd00::5"));
  EXPECT_EQ(parse_peer_ip("fd00::5"), parse_ip("fd00::5"));
  EXPECT_FALSE(parse_peer_ip("unix"));
  EXPECT_FALSE(parse_peer_ip("[fd00::5"));
}

TEST(AccessRule, ParsesRules) {
  AccessRule r = rule("allow publish 10.1.2.3/8");
  EXPECT_TRUE(r.allow);
  EXPECT_EQ(r.action, AccessAction::Publish);
  EXPECT_EQ(r.prefix, 8);
  EXPECT_EQ(r.network, *parse_ip("10.0.0.0"));
  r = rule("  deny   play\tall ");
  EXPECT_FALSE(r.allow);
  EXPECT_EQ(r.action, AccessAction::Play);
  EXPECT_TRUE(r.all);
  EXPECT_EQ(rule("deny play ::1").prefix, 128);
  EXPECT_EQ(rule("deny play 1.2.3.4").prefix, 32);
  EXPECT_NE(error_of("permit publish all").find("allow or deny"), std::string::npos);
  EXPECT_NE(error_of("allow record all").find("publish or play"), std::string::npos);
  EXPECT_NE(error_of("allow publish host.example").find("address"), std::string::npos);
  EXPECT_NE(error_of("allow publish 10.0.0.0/33").find("0 to 32"), std::string::npos);
  EXPECT_NE(error_of("allow publish ::/129").find("0 to 128"), std::string::npos);
  error_of("allow publish 10.0.0.0/");
  error_of("allow publish 10.0.0.0/-1");
  error_of("allow publish");
  error_of("allow publish all extra");
  error_of("");
}

TEST(AccessRule, MatchesCidrV4AndV6) {
  const AccessRule v4 = rule("allow publish 192.168.0.0/16");
  EXPECT_TRUE(v4.matches(AccessAction::Publish, *parse_ip("192.168.255.1")));
  EXPECT_FALSE(v4.matches(AccessAction::Publish, *parse_ip("192.169.0.1")));
  EXPECT_FALSE(v4.matches(AccessAction::Play, *parse_ip("192.168.0.1")));  // other action
  EXPECT_FALSE(v4.matches(AccessAction::Publish, *parse_ip("::1")));      // other family
  const AccessRule odd = rule("allow play 10.0.0.128/25");
  EXPECT_TRUE(odd.matches(AccessAction::Play, *parse_ip("10.0.0.200")));
  EXPECT_FALSE(odd.matches(AccessAction::Play, *parse_ip("10.0.0.127")));
  const AccessRule v6 = rule("deny play fd00::/8");
  EXPECT_TRUE(v6.matches(AccessAction::Play, *parse_ip("fdab:1::2")));
  EXPECT_FALSE(v6.matches(AccessAction::Play, *parse_ip("fe80::1")));
  const AccessRule zero = rule("allow play 0.0.0.0/0");
  EXPECT_TRUE(zero.matches(AccessAction::Play, *parse_ip("8.8.8.8")));
}

TEST(AccessRule, FirstMatchWinsAndDefaultAllows) {
  const std::vector<AccessRule> rules = {rule("allow publish 127.0.0.1"), rule("allow publish 10.0.0.0/8"),
                                         rule("deny publish all"), rule("deny play 10.9.0.0/16")};
  const AccessRule* by = nullptr;
  EXPECT_TRUE(access_allowed(rules, AccessAction::Publish, "127.0.0.1:5000", &by));
  EXPECT_EQ(by, &rules[0]);
  EXPECT_TRUE(access_allowed(rules, AccessAction::Publish, "10.3.4.5:5000"));
  EXPECT_FALSE(access_allowed(rules, AccessAction::Publish, "127.0.0.2:5000", &by));
  EXPECT_EQ(by, &rules[2]);
  EXPECT_FALSE(access_allowed(rules, AccessAction::Publish, "[::1]:5000"));
  EXPECT_FALSE(access_allowed(rules, AccessAction::Publish, "unix"));  // "all" matches it
  EXPECT_FALSE(access_allowed(rules, AccessAction::Play, "10.9.1.1:1"));
  EXPECT_TRUE(access_allowed(rules, AccessAction::Play, "10.8.1.1:1", &by));  // no rule: allowed
  EXPECT_EQ(by, nullptr);
  EXPECT_TRUE(access_allowed({}, AccessAction::Publish, "1.2.3.4:1"));
}
