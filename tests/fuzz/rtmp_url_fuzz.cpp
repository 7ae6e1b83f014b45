// Fuzz target: config::parse_rtmp_url (the URLs of apps.X.edge.origins, push, pull and of the
// relays the API creates). The YAML keys that carry these URLs are the config_loader target's
// (its corpus seeds cluster_*.yaml): through yaml-cpp an input costs ~100 times more, and this
// target would not reach its 10 million executions in a campaign.
// Invariants: no crash; an accepted URL has a non-empty host without '/', a port in 1..65535,
// an app (and a name, when present) that follow the one name rule; stream_url() of it parses back
// to the same host, port and app; a refusal always says why; a config either loads or throws
// ConfigError.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rill/config/cluster_config.h"
#include "rill/core/name_rule.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void check_url(std::string_view text) {
  std::string error;
  auto url = rill::config::parse_rtmp_url(text, &error);
  if (!url) {
    check(!error.empty());
    return;
  }
  check(!url->host.empty() && url->host.find('/') == std::string::npos);
  check(url->port >= 1);
  check(rill::core::is_valid_name(url->app));
  check(url->name.empty() || rill::core::is_valid_name(url->name));
  auto again = rill::config::parse_rtmp_url(rill::config::stream_url(*url, "x"));
  check(again && again->host == url->host && again->port == url->port && again->app == url->app);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_url(text);
  check_url(std::string("rtmp://") + std::string(text));
  return 0;
}
