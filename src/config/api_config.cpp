#include "rill/config/api_config.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

namespace rill::config {

namespace {
const std::vector<std::string_view> kApiKeys = {"listen", "token", "token_file", "metrics_public",
                                                "tls_listen"};
constexpr size_t kMaxTokenLength = 4096;  // it travels in one request header

bool wildcard(const ListenAddress& a) { return a.host == "0.0.0.0" || a.host == "::"; }

// A list of listen addresses, each parsed, none twice.
std::vector<ListenAddress> read_addresses(const YamlReader& reader, const YamlField& field) {
  std::vector<ListenAddress> out;
  for (const YamlField& item : reader.string_list(field)) {
    ListenAddress address;
    try {
      address = parse_listen(item.node.Scalar());
    } catch (const ConfigError& e) {
      reader.fail(item, e.what());
    }
    for (const ListenAddress& other : out) {
      if (other == address) reader.fail(item, "duplicate listen address " + address.to_string());
    }
    out.push_back(address);
  }
  return out;
}

// The token of token_file: the whole file, trailing newlines and spaces stripped (echo > file).
std::string read_token_file(const YamlReader& reader, const YamlField& at, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) reader.fail(at, "cannot read api.token_file " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  if (token.size() > 64 * 1024) reader.fail(at, "api.token_file " + path + " is larger than 64 KiB");
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
    token.pop_back();
  if (token.empty()) reader.fail(at, "api.token_file " + path + " is empty");
  return token;
}

void check_token(const YamlReader& reader, const YamlField& at, const std::string& token,
                 const std::string& what) {
  if (token.empty() || token.size() > kMaxTokenLength)
    reader.fail(at, "expected null or a token of 1 to 4096 characters");
  for (unsigned char c : token) {
    if (c <= 0x20 || c >= 0x7f) reader.fail(at, what + " must be printable ASCII without spaces");
  }
}

// api.tls_listen: HTTPS with the certificate of http: (one certificate per server name).
void read_tls_listen(const YamlReader& reader, const YamlField& field, const HttpConfig& http, ApiConfig& api) {
  api.tls_listen = read_addresses(reader, field);
  for (const ListenAddress& tls : api.tls_listen) {
    for (const ListenAddress& plain : api.listen) {
      if (plain.port == tls.port && (plain.host == tls.host || wildcard(plain) || wildcard(tls))) {
        reader.fail(field, "api.tls_listen address " + tls.to_string() + " overlaps api.listen " + plain.to_string());
      }
    }
  }
  if (!api.tls_listen.empty() && (!http.tls_cert || !http.tls_key)) {
    reader.fail(field, "api.tls_listen needs http.tls_cert and http.tls_key (the API uses the HTTPS certificate)");
  }
}
}  // namespace

ApiConfig read_api_config(const YamlReader& reader, const YamlField& field, const HttpConfig& http) {
  ApiConfig api;
  const YamlMap map(reader, field, kApiKeys);
  if (auto listen = map.get("listen")) api.listen = read_addresses(reader, *listen);
  if (auto tls_listen = map.get("tls_listen")) read_tls_listen(reader, *tls_listen, http, api);
  if (auto token = map.get("token")) {
    api.token = reader.optional_string(*token);
    if (api.token) check_token(reader, *token, *api.token, "the token");
  }
  map.read_optional_string("token_file", api.token_file);
  if (api.token_file) {
    const YamlField at = *map.get("token_file");
    if (api.token) reader.fail(at, "write either api.token or api.token_file, not both");
    api.token = read_token_file(reader, at, *api.token_file);
    check_token(reader, at, *api.token, "the token in api.token_file " + *api.token_file);
  }
  map.read_bool("metrics_public", api.metrics_public);
  return api;
}

}  // namespace rill::config
