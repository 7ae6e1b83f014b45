// Fuzz target: the access-rule parser and matcher (core/access_rule.h).
// Invariants: no crash; a refused rule says why; an accepted rule has a prefix within its
// family's range, its network has no host bits (re-masking changes nothing: it matches itself),
// "all" rules match every address of their action and never the other action; parse_peer_ip on
// the input never crashes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rill/core/access_rule.h"

using namespace rill::core;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parse_peer_ip(text);
  std::string why;
  const auto rule = parse_access_rule(text, &why);
  if (!rule) {
    check(!why.empty());
    return 0;
  }
  const AccessAction other = rule->action == AccessAction::Publish ? AccessAction::Play : AccessAction::Publish;
  const IpAddress v4 = *parse_ip("10.1.2.3");
  const IpAddress v6 = *parse_ip("fd00::1");
  check(!rule->matches(other, v4) && !rule->matches(other, v6));
  if (rule->all) {
    check(rule->matches(rule->action, v4) && rule->matches(rule->action, v6));
    return 0;
  }
  check(rule->network.family == 4 || rule->network.family == 6);
  check(rule->prefix >= 0 && rule->prefix <= (rule->network.family == 4 ? 32 : 128));
  check(rule->matches(rule->action, rule->network));
  const std::vector<AccessRule> rules = {*rule};
  const AccessRule* by = nullptr;
  check(access_allowed(rules, rule->action, "unix", &by) && by == nullptr);
  return 0;
}
