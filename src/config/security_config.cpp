#include "rill/config/security_config.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rill::config {

namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

const std::vector<std::string_view> kAuthKeys = {"secret", "secret_file", "publish", "play"};
const std::vector<std::string_view> kAuthModes = {"open", "token", "callback", "token+callback"};
const std::vector<std::string_view> kCallbackKeys = {"on_publish",      "on_play",   "on_publish_done",
                                                     "on_play_done",    "on_update", "on_record_done",
                                                     "update_interval", "timeout",   "tls_ca_file"};
constexpr size_t kMaxSecretFile = 64 * 1024;

AuthMode mode_of(const std::string& word) {
  if (word == "token") return AuthMode::Token;
  if (word == "callback") return AuthMode::Callback;
  if (word == "token+callback") return AuthMode::TokenAndCallback;
  return AuthMode::Open;
}

bool needs_token(AuthMode m) { return m == AuthMode::Token || m == AuthMode::TokenAndCallback; }
bool needs_callback(AuthMode m) { return m == AuthMode::Callback || m == AuthMode::TokenAndCallback; }

std::string read_secret_file(const YamlReader& reader, const YamlField& at, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) reader.fail(at, "cannot read secret_file " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  if (secret.size() > kMaxSecretFile) reader.fail(at, "secret_file " + path + " is larger than 64KiB");
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' || secret.back() == ' ')) secret.pop_back();
  if (secret.empty()) reader.fail(at, "secret_file " + path + " is empty");
  return secret;
}

AuthConfig read_auth(const YamlReader& reader, const YamlField& f) {
  AuthConfig auth;
  const YamlMap map(reader, f, kAuthKeys);
  if (auto s = map.get("secret")) {
    auth.secret = reader.optional_string(*s);
    if (auth.secret && auth.secret->empty()) reader.fail(*s, "must not be empty (null: no secret)");
  }
  map.read_optional_string("secret_file", auth.secret_file);
  if (auth.secret_file) {
    const YamlField at = *map.get("secret_file");
    if (auth.secret) reader.fail(at, "write either secret or secret_file, not both");
    auth.secret = read_secret_file(reader, at, *auth.secret_file);
  }
  if (auto p = map.get("publish")) auth.publish = mode_of(reader.one_of(*p, kAuthModes));
  if (auto p = map.get("play")) auth.play = mode_of(reader.one_of(*p, kAuthModes));
  if (!auth.secret && (needs_token(auth.publish) || needs_token(auth.play))) {
    reader.fail(f, "a token mode needs a secret (auth.secret or auth.secret_file)");
  }
  return auth;
}

std::vector<core::AccessRule> read_access(const YamlReader& reader, const YamlField& f) {
  std::vector<core::AccessRule> rules;
  if (f.node.IsNull()) return rules;
  if (!f.node.IsSequence()) reader.fail(f, "expected a list of rules, got " + YamlReader::describe(f.node));
  for (const YamlField& item : reader.string_list(f)) {
    std::string why;
    auto rule = core::parse_access_rule(item.node.Scalar(), &why);
    if (!rule) reader.fail(item, why);
    rules.push_back(std::move(*rule));
  }
  return rules;
}

// "http://HOST[:PORT]/PATH" or "https://…": the callback client speaks HTTP/1.1, over TLS for
// https (the server verified against callbacks.tls_ca_file or the system's trust store).
bool check_callback_url(const YamlReader& reader, const YamlField& at, const std::string& url) {
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (url.compare(0, scheme.size(), scheme) == 0 && url.size() > scheme.size() &&
        url[scheme.size()] != '/') {
      return scheme == "https://";
    }
  }
  reader.fail(at, "expected an http:// or https:// URL (http[s]://HOST[:PORT]/PATH), got '" + url + "'");
}

CallbacksConfig read_callbacks(const YamlReader& reader, const YamlField& f) {
  CallbacksConfig cb;
  const YamlMap map(reader, f, kCallbackKeys);
  const std::pair<const char*, std::optional<std::string>*> urls[] = {
      {"on_publish", &cb.on_publish},
      {"on_play", &cb.on_play},
      {"on_publish_done", &cb.on_publish_done},
      {"on_play_done", &cb.on_play_done},
      {"on_update", &cb.on_update},
      {"on_record_done", &cb.on_record_done}};
  bool any_https = false;
  for (const auto& [key, out] : urls) {
    map.read_optional_string(key, *out);
    if (*out && check_callback_url(reader, *map.get(key), **out)) any_https = true;
  }
  map.read_duration("update_interval", cb.update_interval, milliseconds(1000), hours(24));
  map.read_duration("timeout", cb.timeout, milliseconds(10), milliseconds(60000));
  map.read_optional_string("tls_ca_file", cb.tls_ca_file);
  if (cb.tls_ca_file) {
    const YamlField at = *map.get("tls_ca_file");
    if (!any_https) reader.fail(at, "tls_ca_file is for https:// callback URLs only");
    if (!std::ifstream(*cb.tls_ca_file)) {
      reader.fail(at, "cannot read tls_ca_file " + *cb.tls_ca_file + ": " + std::strerror(errno));
    }
  }
  return cb;
}

// tls_listen / tls_cert / tls_key of `section`: addresses that must not overlap its plain ones.
void read_tls_listen(const YamlReader& reader, const YamlMap& map, const std::string& section,
                     const std::vector<ListenAddress>& plain_listen, std::vector<ListenAddress>& tls_listen,
                     std::optional<std::string>& cert, std::optional<std::string>& key) {
  map.read_optional_string("tls_cert", cert);
  map.read_optional_string("tls_key", key);
  const auto field = map.get("tls_listen");
  if (!field) return;
  for (const YamlField& item : reader.string_list(*field)) {
    ListenAddress a;
    try {
      a = parse_listen(item.node.Scalar());
    } catch (const ConfigError& e) {
      reader.fail(item, e.what());
    }
    for (const ListenAddress& plain : plain_listen) {
      if (plain.port == a.port && (plain.host == a.host || plain.host == "0.0.0.0" || plain.host == "::" ||
                                   a.host == "0.0.0.0" || a.host == "::")) {
        reader.fail(item, "TLS listen address " + a.to_string() + " overlaps " + section + ".listen " + plain.to_string());
      }
    }
    tls_listen.push_back(a);
  }
  if (!tls_listen.empty() && (!cert || !key)) {
    reader.fail(*field, "TLS needs " + section + ".tls_cert and " + section + ".tls_key");
  }
}

}  // namespace

void read_app_security(const YamlReader& reader, const YamlMap& app_map, AppConfig& app) {
  if (auto f = app_map.get("auth")) app.auth = read_auth(reader, *f);
  if (auto f = app_map.get("access")) app.access = read_access(reader, *f);
  if (auto f = app_map.get("callbacks")) app.callbacks = read_callbacks(reader, *f);
  const auto at = [&app_map]() {
    auto f = app_map.get("auth");
    return f ? *f : app_map.field();
  };
  if (needs_callback(app.auth.publish) && !app.callbacks.on_publish) {
    reader.fail(at(), "auth.publish: callback needs callbacks.on_publish");
  }
  if (needs_callback(app.auth.play) && !app.callbacks.on_play) {
    reader.fail(at(), "auth.play: callback needs callbacks.on_play");
  }
}

void read_rtmp_tls(const YamlReader& reader, const YamlMap& map, RtmpConfig& rtmp) {
  read_tls_listen(reader, map, "rtmp", rtmp.listen, rtmp.tls_listen, rtmp.tls_cert, rtmp.tls_key);
}

void read_http_tls(const YamlReader& reader, const YamlMap& map, HttpConfig& http) {
  read_tls_listen(reader, map, "http", http.listen, http.tls_listen, http.tls_cert, http.tls_key);
}

void read_connections_per_ip(const YamlMap& map, size_t& out) {
  map.read_int("max_connections_per_ip", out, 0, 1'000'000);
}

}  // namespace rill::config
