// apps.X.edge / push / pull: the cluster keys of an app (docs/cluster.md).
#include "rill/config/cluster_config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "rill/core/name_rule.h"

namespace rill::config {

using std::chrono::hours;
using std::chrono::milliseconds;


namespace {

const std::vector<std::string_view> kEdgeKeys = {"origins", "connect_timeout", "idle_close",
                                                 "publish", "tls_verify",      "tls_ca_file"};
const std::vector<std::string_view> kPushKeys = {"url", "reconnect", "tls_verify", "tls_ca_file"};
const std::vector<std::string_view> kPullKeys = {"url", "name", "tls_verify", "tls_ca_file"};

std::optional<RtmpUrl> url_error(std::string* error, std::string_view text, const std::string& why) {
  if (error) *error = "expected rtmp[s]://HOST[:PORT]/APP[/NAME], got '" + std::string(text) + "': " + why;
  return std::nullopt;
}

// Splits "host[:port]" (or "[v6]:port") into url.host / url.port.
bool parse_authority(std::string_view auth, RtmpUrl& url, std::string& why) {
  std::string_view port;
  if (!auth.empty() && auth.front() == '[') {
    const size_t close = auth.find(']');
    if (close == std::string_view::npos) return why = "unterminated [IPv6 address]", false;
    url.host = std::string(auth.substr(1, close - 1));
    std::string_view rest = auth.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return why = "junk after ]", false;
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const size_t colon = auth.find(':');
    url.host = std::string(auth.substr(0, colon));
    if (colon != std::string_view::npos) port = auth.substr(colon + 1);
  }
  if (url.host.empty()) return why = "no host", false;
  for (char c : url.host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == ':' || c == '_';
    if (!ok) return why = "bad character in host", false;
  }
  if (auth.find('[') == std::string_view::npos && port.empty() && auth.back() == ':') return why = "empty port", false;
  if (!port.empty()) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc() || p != port.data() + port.size() || v == 0 || v > 65535) return why = "bad port", false;
    url.port = static_cast<uint16_t>(v);
  }
  return true;
}

RtmpUrl read_url(const YamlReader& reader, const YamlField& f) {
  const std::string text = reader.string(f, false);
  std::string error;
  auto url = parse_rtmp_url(text, &error);
  if (!url) reader.fail(f, error);
  return *url;
}

// The relay's tls_verify / tls_ca_file, given to each of its URLs: a CA file must be readable
// now (`rill -t`), and only rtmps:// URLs use them.
void read_relay_tls(const YamlReader& reader, const YamlMap& map, std::vector<RtmpUrl*> urls) {
  bool verify = true;
  std::optional<std::string> ca_file;
  map.read_bool("tls_verify", verify);
  map.read_optional_string("tls_ca_file", ca_file);
  const bool any_tls = std::any_of(urls.begin(), urls.end(), [](const RtmpUrl* u) { return u->tls; });
  for (const char* key : {"tls_verify", "tls_ca_file"}) {
    if (auto f = map.get(key); f && !any_tls)
      reader.fail(*f, std::string(key) + " is for rtmps:// URLs only");
  }
  if (ca_file) {
    const YamlField at = *map.get("tls_ca_file");
    if (!verify) reader.fail(at, "tls_ca_file with tls_verify: false (nothing is verified)");
    if (!std::ifstream(*ca_file))
      reader.fail(at, "cannot read tls_ca_file " + *ca_file + ": " + std::strerror(errno));
  }
  for (RtmpUrl* u : urls) {
    if (!u->tls) continue;
    u->tls_verify = verify;
    u->tls_ca_file = ca_file;
  }
}

EdgeConfig read_edge(const YamlReader& reader, const YamlField& f) {
  EdgeConfig edge;
  const YamlMap map(reader, f, kEdgeKeys);
  auto origins = map.get("origins");
  if (!origins) reader.fail(f, "missing: origins (a list of rtmp:// or rtmps:// URLs)");
  for (const YamlField& item : reader.string_list(*origins)) {
    RtmpUrl url = read_url(reader, item);
    if (!url.name.empty())
      reader.fail(item, "an origin is an app URL (rtmp[s]://HOST[:PORT]/APP), not a stream");
    edge.origins.push_back(std::move(url));
  }
  if (edge.origins.empty()) reader.fail(*origins, "at least one origin is required");
  std::vector<RtmpUrl*> urls;
  for (RtmpUrl& u : edge.origins) urls.push_back(&u);
  read_relay_tls(reader, map, urls);
  map.read_duration("connect_timeout", edge.connect_timeout, milliseconds(100), hours(1));
  map.read_duration("idle_close", edge.idle_close, milliseconds(0), hours(24));
  if (auto p = map.get("publish")) {
    const std::string v = reader.one_of(*p, {"forward", "local", "refuse"});
    edge.publish = v == "forward" ? EdgePublish::Forward : v == "local" ? EdgePublish::Local : EdgePublish::Refuse;
  }
  return edge;
}

// The required `url` key of a push or pull entry.
RtmpUrl required_url(const YamlReader& reader, const YamlMap& map) {
  auto url = map.get("url");
  if (!url) reader.fail(map.field(), "missing: url");
  return read_url(reader, *url);
}

PushTarget read_push(const YamlReader& reader, const YamlField& f) {
  PushTarget t;
  const YamlMap map(reader, f, kPushKeys);
  t.url = required_url(reader, map);
  map.read_duration("reconnect", t.reconnect, milliseconds(100), hours(1));
  read_relay_tls(reader, map, {&t.url});
  return t;
}

PullSource read_pull(const YamlReader& reader, const YamlField& f) {
  PullSource s;
  const YamlMap map(reader, f, kPullKeys);
  s.url = required_url(reader, map);
  s.name = s.url.name;
  read_relay_tls(reader, map, {&s.url});
  map.read_string("name", s.name, false);
  if (s.name.empty()) reader.fail(f, "missing: name (the URL names no stream)");
  if (auto why = core::name_error(s.name)) reader.fail(f, "invalid name '" + s.name + "': " + *why);
  if (s.url.name.empty())
    reader.fail(*map.get("url"), "a pull URL names its stream: rtmp[s]://HOST[:PORT]/APP/NAME");
  return s;
}

}  // namespace

std::optional<RtmpUrl> parse_rtmp_url(std::string_view text, std::string* error) {
  constexpr std::string_view kScheme = "rtmp://";
  constexpr std::string_view kTlsScheme = "rtmps://";
  RtmpUrl url;
  url.tls = text.substr(0, kTlsScheme.size()) == kTlsScheme;
  if (!url.tls && text.substr(0, kScheme.size()) != kScheme) {
    return url_error(error, text, "scheme must be rtmp:// or rtmps://");
  }
  if (url.tls) url.port = 443;
  url.text = std::string(text);
  std::string_view rest = text.substr(url.tls ? kTlsScheme.size() : kScheme.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return url_error(error, text, "no /APP");
  std::string why;
  if (!parse_authority(rest.substr(0, slash), url, why)) return url_error(error, text, why);
  std::string_view path = rest.substr(slash + 1);
  if (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const size_t sep = path.find('/');
  url.app = std::string(path.substr(0, sep));
  if (sep != std::string_view::npos) url.name = std::string(path.substr(sep + 1));
  if (auto e = core::name_error(url.app)) return url_error(error, text, "app: " + *e);
  if (sep != std::string_view::npos) {
    if (auto e = core::name_error(url.name)) return url_error(error, text, "name: " + *e);
  }
  return url;
}

std::string stream_url(const RtmpUrl& url, const std::string& name) {
  const bool v6 = url.host.find(':') != std::string::npos;
  std::string host = v6 ? "[" + url.host + "]" : url.host;
  return (url.tls ? "rtmps://" : "rtmp://") + host + ":" + std::to_string(url.port) + "/" + url.app + "/" +
         (url.name.empty() ? name : url.name);
}

void read_cluster_keys(const YamlReader& reader, const YamlMap& map, AppConfig& app) {
  if (auto f = map.get("edge")) app.edge = read_edge(reader, *f);
  if (auto f = map.get("push")) {
    for (const YamlField& item : reader.map_list(*f)) app.push.push_back(read_push(reader, item));
  }
  if (auto f = map.get("pull")) {
    for (const YamlField& item : reader.map_list(*f)) {
      PullSource s = read_pull(reader, item);
      for (const PullSource& other : app.pull) {
        if (other.name == s.name) reader.fail(item, "two pulls feed stream '" + s.name + "'");
      }
      app.pull.push_back(std::move(s));
    }
  }
}

}  // namespace rill::config
