#include "rill/config/api_config.h"

#include <string_view>
#include <vector>

namespace rill::config {

namespace {
const std::vector<std::string_view> kApiKeys = {"listen", "token", "metrics_public"};
constexpr size_t kMaxTokenLength = 4096;  // it travels in one request header
}  // namespace

ApiConfig read_api_config(const YamlReader& reader, const YamlField& field) {
  ApiConfig api;
  const YamlMap map(reader, field, kApiKeys);
  if (auto listen = map.get("listen")) {
    api.listen.clear();
    for (const YamlField& item : reader.string_list(*listen)) {
      ListenAddress address;
      try {
        address = parse_listen(item.node.Scalar());
      } catch (const ConfigError& e) {
        reader.fail(item, e.what());
      }
      for (const ListenAddress& other : api.listen) {
        if (other == address) reader.fail(item, "duplicate listen address " + address.to_string());
      }
      api.listen.push_back(address);
    }
  }
  if (auto token = map.get("token")) {
    api.token = reader.optional_string(*token);
    if (api.token && (api.token->empty() || api.token->size() > kMaxTokenLength)) {
      reader.fail(*token, "expected null or a token of 1 to 4096 characters");
    }
    if (api.token) {
      for (unsigned char c : *api.token) {
        if (c <= 0x20 || c >= 0x7f) reader.fail(*token, "the token must be printable ASCII without spaces");
      }
    }
  }
  map.read_bool("metrics_public", api.metrics_public);
  return api;
}

}  // namespace rill::config
