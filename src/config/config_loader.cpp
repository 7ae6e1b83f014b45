// The schema of the configuration file: which keys exist where, their types and bounds, and the
// checks that span several keys. The syntax of each value lives in yaml_reader.cpp / units.cpp.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

#include "rill/config/api_config.h"
#include "rill/config/cluster_config.h"
#include "rill/config/config.h"
#include "rill/config/default_config.h"
#include "rill/config/exec_config.h"
#include "rill/config/merge_writes_config.h"
#include "rill/config/record_config.h"
#include "rill/config/security_config.h"
#include "rill/config/units.h"
#include "rill/config/yaml_reader.h"
#include "rill/core/name_rule.h"

namespace rill::config {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;
constexpr size_t kGiB = 1024 * kMiB;
constexpr int64_t kMaxConnections = 1'000'000;
// A Unix socket path holds 107 bytes; leave room for the socket names under runtime_dir.
constexpr size_t kMaxRuntimeDirLength = 80;

const std::vector<std::string_view> kRootKeys = {"workers",
                                                 "user",
                                                 "pid_file",
                                                 "runtime_dir",
                                                 "shutdown_timeout",
                                                 "merge_writes",
                                                 "merge_writes_max",
                                                 "send_method",
                                                 "log",
                                                 "rtmp",
                                                 "http",
                                                 "api",
                                                 "worker_link",
                                                 "relay",
                                                 "apps",
                                                 "exec_max"};
const std::vector<std::string_view> kLogKeys = {"level",      "file",          "format",
                                                "access_log", "access_format", "redact_params"};
const std::vector<std::string_view> kLogFormats = {"text", "json"};
const std::vector<std::string_view> kAccessFormats = {"combined", "json"};
const std::vector<std::string_view> kLogLevels = {"trace", "debug",    "info", "warn",
                                                  "error", "critical", "off"};
const std::vector<std::string_view> kRtmpKeys = {
    "listen",           "chunk_size",        "max_chunk_size",
    "max_message_size", "handshake_timeout", "idle_timeout",
    "ping_interval",    "ack_window",        "max_connections",
    "send_buffer",      "notsent_lowat",     "max_connections_per_ip",
    "tls_listen",       "tls_cert",          "tls_key"};
const std::vector<std::string_view> kHttpKeys = {
    "listen",      "max_header_size", "max_body_size",          "timeout",  "max_connections", "cors_origin",
    "send_buffer", "notsent_lowat",   "max_connections_per_ip", "sendfile", "tls_listen",      "tls_cert",
    "tls_key"};
const std::vector<std::string_view> kWorkerLinkKeys = {"idle_grace"};
const std::vector<std::string_view> kAppKeys = {"gop_cache",
                                                "gop_cache_max_bytes",
                                                "gop_cache_max_frames",
                                                "play_wait",
                                                "publisher_idle_timeout",
                                                "queue",
                                                "hls",
                                                "record",
                                                "auth",
                                                "access",
                                                "callbacks",
                                                "edge",
                                                "push",
                                                "pull",
                                                "exec"};
const std::vector<std::string_view> kQueueKeys = {"soft_bytes", "hard_bytes", "soft_duration",
                                                  "hard_duration"};
const std::vector<std::string_view> kHlsKeys = {
    "enabled",   "fragment",    "window", "max_fragment", "max_segment_size",
    "container", "low_latency", "part",   "variants",     "rewind"};
const std::vector<std::string_view> kHlsVariantKeys = {"suffix"};

bool contains(const std::vector<std::string_view>& list, std::string_view word) {
  for (const auto& w : list) {
    if (w == word) return true;
  }
  return false;
}

std::string at_line(const YAML::Mark& mark) {
  return mark.is_null() ? "" : ", line " + std::to_string(mark.line + 1);
}

// A listen address with the place it was written, for the checks across rtmp and http.
struct PlacedAddress {
  ListenAddress address;
  YamlField field;
  bool is_default = false;  // not written in the file
};

std::vector<ListenAddress> read_listen(const YamlReader& reader, const YamlMap& map,
                                       std::vector<ListenAddress> defaults, std::vector<PlacedAddress>& all) {
  std::vector<ListenAddress> out;
  const auto field = map.get("listen");
  if (!field) {
    for (const auto& a : defaults) {
      all.push_back({a, YamlField{YAML::Node(), map.field().mark, map.path_of("listen")}, true});
    }
    return defaults;
  }
  for (const YamlField& item : reader.string_list(*field)) {
    ListenAddress address;
    try {
      address = parse_listen(item.node.Scalar());
    } catch (const ConfigError& e) {
      reader.fail(item, e.what());
    }
    for (const PlacedAddress& other : all) {
      const ListenAddress& o = other.address;
      if (o.port != address.port) continue;
      const std::string where = other.is_default ? " (the default of " + other.field.path + ")"
                                                 : " (" + other.field.path + at_line(other.field.mark) + ")";
      if (o.host == address.host) {
        reader.fail(item, "duplicate listen address " + address.to_string() + where);
      }
      const bool v6 = address.host.find(':') != std::string::npos;
      const bool other_v6 = o.host.find(':') != std::string::npos;
      const std::string any = v6 ? "::" : "0.0.0.0";
      if (v6 == other_v6 && (o.host == any || address.host == any)) {
        reader.fail(item, "listen address " + address.to_string() + " overlaps " + o.to_string() + where +
                              ": a wildcard address already covers every local address "
                              "of its family on that port");
      }
    }
    all.push_back({address, item, false});
    out.push_back(address);
  }
  return out;
}

uint32_t read_workers(const YamlReader& reader, const YamlField& f) {
  constexpr int64_t kMaxWorkers = 1024;
  const std::string expected = "expected auto or an integer between 1 and 1024, got ";
  if (!f.node.IsScalar()) reader.fail(f, expected + YamlReader::describe(f.node));
  const std::string& text = f.node.Scalar();
  if (text == "auto") return 0;
  if (text.empty() || text.find_first_not_of("-0123456789") != std::string::npos) {
    reader.fail(f, expected + YamlReader::describe(f.node));
  }
  return static_cast<uint32_t>(reader.integer(f, 1, kMaxWorkers));
}

LogConfig read_log(const YamlReader& reader, const YamlField& f) {
  LogConfig log;
  const YamlMap map(reader, f, kLogKeys);
  if (auto level = map.get("level")) log.level = reader.one_of(*level, kLogLevels);
  map.read_optional_string("file", log.file);
  if (auto format = map.get("format")) log.json = reader.one_of(*format, kLogFormats) == "json";
  map.read_optional_string("access_log", log.access_log);
  if (auto format = map.get("access_format")) {
    log.access_format = reader.one_of(*format, kAccessFormats) == "json" ? core::AccessFormat::Json
                                                                         : core::AccessFormat::Combined;
  }
  if (auto params = map.get("redact_params")) {
    // The list replaces the default, but the signed token's `sign` is always redacted.
    log.redact_params = {"sign"};
    for (const YamlField& p : reader.string_list(*params)) {
      std::string name = reader.string(p, false);
      if (name != "sign") log.redact_params.push_back(std::move(name));
    }
  }
  return log;
}

RtmpConfig read_rtmp(const YamlReader& reader, const YamlField& f, std::vector<PlacedAddress>& addresses) {
  RtmpConfig rtmp;
  const YamlMap map(reader, f, kRtmpKeys);
  rtmp.listen = read_listen(reader, map, rtmp.listen, addresses);
  map.read_int("chunk_size", rtmp.chunk_size, 128, 65536);
  size_t max_chunk_size = rtmp.max_chunk_size;
  map.read_size("max_chunk_size", max_chunk_size, 128, 16 * kMiB);
  rtmp.max_chunk_size = static_cast<uint32_t>(max_chunk_size);
  // RTMP message lengths are 24-bit: nothing larger than 16MiB can arrive.
  map.read_size("max_message_size", rtmp.max_message_size, kKiB, 16 * kMiB);
  map.read_duration("handshake_timeout", rtmp.handshake_timeout, milliseconds(1), hours(1));
  map.read_duration("idle_timeout", rtmp.idle_timeout, milliseconds(1), hours(24));
  map.read_duration("ping_interval", rtmp.ping_interval, milliseconds(0), hours(1));
  map.read_int("ack_window", rtmp.ack_window, 1024, std::numeric_limits<int32_t>::max());
  map.read_int("max_connections", rtmp.max_connections, 1, kMaxConnections);
  map.read_size("send_buffer", rtmp.send_buffer, 0, 64 * kMiB);
  map.read_size("notsent_lowat", rtmp.notsent_lowat, 0, 64 * kMiB);
  read_connections_per_ip(map, rtmp.max_connections_per_ip);
  read_rtmp_tls(reader, map, rtmp);
  return rtmp;
}

HttpConfig read_http(const YamlReader& reader, const YamlField& f, std::vector<PlacedAddress>& addresses) {
  HttpConfig http;
  const YamlMap map(reader, f, kHttpKeys);
  http.listen = read_listen(reader, map, http.listen, addresses);
  map.read_size("max_header_size", http.max_header_size, kKiB, kMiB);
  map.read_size("max_body_size", http.max_body_size, 0, 16 * kMiB);
  map.read_duration("timeout", http.timeout, milliseconds(1), hours(24));
  map.read_int("max_connections", http.max_connections, 1, kMaxConnections);
  map.read_string("cors_origin", http.cors_origin, /*allow_empty=*/true);
  map.read_size("send_buffer", http.send_buffer, 0, 64 * kMiB);
  map.read_size("notsent_lowat", http.notsent_lowat, 0, 64 * kMiB);
  read_connections_per_ip(map, http.max_connections_per_ip);
  map.read_bool("sendfile", http.sendfile);
  read_http_tls(reader, map, http);
  return http;
}

WorkerLinkConfig read_worker_link(const YamlReader& reader, const YamlField& f) {
  WorkerLinkConfig link;
  const YamlMap map(reader, f, kWorkerLinkKeys);
  map.read_duration("idle_grace", link.idle_grace, milliseconds(0), hours(1));
  return link;
}

// Fails unless soft <= hard, pointing at whichever of the two keys was written (the soft one
// when both were).
template <class T, class Format>
void check_soft_hard(const YamlReader& reader, const YamlMap& map, std::string_view soft_key, const T& soft,
                     std::string_view hard_key, const T& hard, Format format) {
  if (soft <= hard) return;
  const auto soft_field = map.get(soft_key);
  const YamlField at = soft_field ? *soft_field : *map.get(hard_key);
  reader.fail(at, std::string(soft_key) + " (" + format(soft) + ") must not exceed " + std::string(hard_key) +
                      " (" + format(hard) + ")");
}

void read_queue(const YamlReader& reader, const YamlField& f, AppConfig& app) {
  const YamlMap map(reader, f, kQueueKeys);
  map.read_size("soft_bytes", app.queue_soft_bytes, 1, 4 * kGiB);
  map.read_size("hard_bytes", app.queue_hard_bytes, 1, 4 * kGiB);
  map.read_duration("soft_duration", app.queue_soft_duration, milliseconds(1), hours(1));
  map.read_duration("hard_duration", app.queue_hard_duration, milliseconds(1), hours(1));
  check_soft_hard(reader, map, "soft_bytes", app.queue_soft_bytes, "hard_bytes", app.queue_hard_bytes,
                  format_size);
  check_soft_hard(reader, map, "soft_duration", app.queue_soft_duration, "hard_duration",
                  app.queue_hard_duration, format_duration);
}

// hls.variants: [{suffix: _hi}, ...] (docs/abr.md). A suffix is part of a stream name, so it
// follows the name rule's characters; an empty or repeated one is an error at its place.
std::vector<std::string> read_hls_variants(const YamlReader& reader, const YamlField& f) {
  std::vector<std::string> out;
  for (const YamlField& item : reader.map_list(f)) {
    const YamlMap entry(reader, item, kHlsVariantKeys);
    const auto suffix = entry.get("suffix");
    if (!suffix) reader.fail(item, "missing: suffix");
    const std::string s = reader.string(*suffix, /*allow_empty=*/true);
    if (s.empty()) reader.fail(*suffix, "a variant suffix must not be empty");
    if (auto why = core::name_error(s)) reader.fail(*suffix, "invalid variant suffix (" + *why + ")");
    if (std::find(out.begin(), out.end(), s) != out.end())
      reader.fail(*suffix, "duplicate variant suffix '" + s + "'");
    out.push_back(s);
  }
  return out;
}

HlsConfig read_hls(const YamlReader& reader, const YamlField& f) {
  HlsConfig hls;
  const YamlMap map(reader, f, kHlsKeys);
  map.read_bool("enabled", hls.enabled);
  map.read_duration("fragment", hls.fragment, milliseconds(100), hours(1));
  map.read_int("window", hls.window, 1, 1000);
  map.read_duration("max_fragment", hls.max_fragment, milliseconds(0), hours(24));
  map.read_size("max_segment_size", hls.max_segment_size, kKiB, 4 * kGiB);
  std::string container = "ts";
  map.read_string("container", container, /*allow_empty=*/false);
  if (container != "ts" && container != "fmp4")
    reader.fail(*map.get("container"), "container must be ts or fmp4");
  hls.container = container == "fmp4" ? HlsContainer::Fmp4 : HlsContainer::Ts;
  map.read_bool("low_latency", hls.low_latency);
  map.read_duration("part", hls.part, milliseconds(100), milliseconds(2000));
  if (auto variants = map.get("variants")) hls.variant_suffixes = read_hls_variants(reader, *variants);
  map.read_duration("rewind", hls.rewind, milliseconds(0), hours(24));
  if (hls.low_latency) hls.container = HlsContainer::Fmp4;  // LL-HLS parts are fMP4 (RFC 8216bis §4.4.4.9)
  if (hls.max_fragment != Duration{0} && hls.max_fragment < hls.fragment) {
    const auto max_field = map.get("max_fragment");
    reader.fail(max_field ? *max_field : *map.get("fragment"),
                "max_fragment (" + format_duration(hls.max_fragment) + ") must be 0 or at least fragment (" +
                    format_duration(hls.fragment) + ")");
  }
  return hls;
}

// hls.rewind reads segments back from the fMP4 recording under the live EXT-X-MAP (docs/hls.md
// "Rewind"): it needs both in fMP4 and a recording.
void check_rewind(const YamlReader& reader, const YamlField& hls_field, const AppConfig& app) {
  if (app.hls.rewind.count() == 0) return;
  std::string missing;
  if (app.hls.container != HlsContainer::Fmp4) missing = "hls.container: fmp4";
  if (app.record.mode == RecordMode::Off)
    missing += std::string(missing.empty() ? "" : ", ") + "record.mode other than off";
  if (app.record.format != RecordFormat::Fmp4)
    missing += std::string(missing.empty() ? "" : ", ") + "record.format: fmp4";
  if (missing.empty()) return;
  const YamlMap map(reader, hls_field, kHlsKeys);
  reader.fail(*map.get("rewind"), "rewind plays back from the recording: it needs " + missing);
}

AppConfig read_app(const YamlReader& reader, const YamlMap::Entry& entry) {
  AppConfig app;
  app.name = entry.key;
  if (auto why = core::name_error(entry.key)) {
    reader.fail(
        entry.key_mark, entry.value.path,
        "invalid app name (" + *why + "): use 1 to 128 letters, digits, '_', '-', '~' and '.' (no '..')");
  }
  const YamlField& f = entry.value;
  if (!f.node.IsNull() && !f.node.IsMap()) {
    std::string message = "expected a map of app options, got " + YamlReader::describe(f.node);
    if (contains(kAppKeys, entry.key)) {
      message += " ('" + entry.key + "' is an app option: write it under apps.NAME)";
    }
    reader.fail(f, message);
  }
  const YamlMap map(reader, f, kAppKeys);
  map.read_bool("gop_cache", app.gop_cache);
  map.read_size("gop_cache_max_bytes", app.gop_cache_max_bytes, 1, 4 * kGiB);
  map.read_int("gop_cache_max_frames", app.gop_cache_max_frames, 1, 1'000'000);
  map.read_duration("play_wait", app.play_wait, milliseconds(0), hours(1));
  map.read_duration("publisher_idle_timeout", app.publisher_idle_timeout, milliseconds(0), hours(24));
  if (auto queue = map.get("queue")) read_queue(reader, *queue, app);
  if (auto hls = map.get("hls")) app.hls = read_hls(reader, *hls);
  read_record(reader, map, app);
  if (auto hls = map.get("hls")) check_rewind(reader, *hls, app);
  read_app_security(reader, map, app);
  read_cluster_keys(reader, map, app);
  read_exec(reader, map, app);
  return app;
}

// The recording files are served under /recordings/ (docs/recording.md, "Playback"), a route taken
// before the apps': an app of that name would never get its HLS nor its HTTP-FLV.
void check_recordings_app(const YamlReader& reader, const YamlMap& apps_map,
                          const std::map<std::string, AppConfig>& apps) {
  const auto& entries = apps_map.entries();
  const auto named = std::find_if(entries.begin(), entries.end(),
                                  [](const YamlMap::Entry& e) { return e.key == "recordings"; });
  if (named == entries.end()) return;
  for (const auto& [name, app] : apps) {
    if (!app.record.enabled() || !app.record.serve) continue;
    reader.fail(named->key_mark, named->value.path,
                "app 'recordings' is unreachable: /recordings/ serves the recording files (app '" + name +
                    "' records with record.serve on); rename the app, or set record.serve: false in every "
                    "recording app");
  }
}

std::map<std::string, AppConfig> read_apps(const YamlReader& reader, const YamlMap& root) {
  const auto field = root.get("apps");
  if (!field) {
    reader.fail(root.field().mark, "apps", "missing: at least one app is required");
  }
  const YamlMap map(reader, *field);  // any key: the keys are app names
  if (map.entries().empty()) reader.fail(*field, "at least one app is required");
  std::map<std::string, AppConfig> apps;
  for (const YamlMap::Entry& entry : map.entries()) apps.emplace(entry.key, read_app(reader, entry));
  check_recordings_app(reader, map, apps);
  return apps;
}

// An app option written at the top level is a common slip: say where it belongs.
void check_misplaced_app_keys(const YamlReader& reader, const YamlField& root) {
  if (!root.node.IsMap()) return;
  for (auto it = root.node.begin(); it != root.node.end(); ++it) {
    const YAML::Node key_node = it->first;
    if (!key_node.IsScalar()) continue;
    const std::string& key = key_node.Scalar();
    if (!contains(kRootKeys, key) && contains(kAppKeys, key)) {
      reader.fail(key_node.Mark(), key,
                  "unknown key at the top level; '" + key +
                      "' is an app option: write it under apps.NAME (e.g. apps.live." + key + ")");
    }
  }
}

Config read_config(const YamlReader& reader, const YamlField& root_field) {
  Config config;
  config.source_name = reader.source_name();
  if (!root_field.node.IsNull() && !root_field.node.IsMap()) {
    reader.fail(root_field,
                "expected a map of settings at the top level, got " + YamlReader::describe(root_field.node));
  }
  check_misplaced_app_keys(reader, root_field);
  const YamlMap root(reader, root_field, kRootKeys);

  if (auto workers = root.get("workers")) config.workers = read_workers(reader, *workers);
  root.read_optional_string("user", config.user);
  root.read_optional_string("pid_file", config.pid_file);
  root.read_string("runtime_dir", config.runtime_dir, /*allow_empty=*/false);
  if (config.runtime_dir.size() > kMaxRuntimeDirLength) {
    reader.fail(*root.get("runtime_dir"), "must be at most " + std::to_string(kMaxRuntimeDirLength) +
                                              " characters long, so that Unix socket paths under it fit");
  }
  root.read_duration("shutdown_timeout", config.shutdown_timeout, milliseconds(0), hours(24));
  root.read_int("exec_max", config.exec_max, 0, 100'000);
  read_merge_writes(reader, root, config);
  if (auto log = root.get("log")) config.log = read_log(reader, *log);

  std::vector<PlacedAddress> addresses;
  {
    const auto rtmp = root.get("rtmp");
    config.rtmp =
        read_rtmp(reader, rtmp ? *rtmp : YamlField{YAML::Node(), root_field.mark, "rtmp"}, addresses);
    const auto http = root.get("http");
    config.http =
        read_http(reader, http ? *http : YamlField{YAML::Node(), root_field.mark, "http"}, addresses);
  }
  if (config.rtmp.listen.empty() && config.http.listen.empty()) {
    reader.fail(root_field.mark, "rtmp.listen",
                "no listen address at all: rtmp.listen and http.listen are both empty");
  }
  if (auto api = root.get("api")) config.api = read_api_config(reader, *api, config.http);
  // `relay:` is the section's name before the cluster brought relays between servers.
  const auto link = root.get("worker_link");
  const auto old_name = root.get("relay");
  if (link && old_name) {
    reader.fail(old_name->mark, "relay", "'relay' is the old name of 'worker_link': keep only 'worker_link'");
  }
  if (link || old_name) config.worker_link = read_worker_link(reader, link ? *link : *old_name);
  config.apps = read_apps(reader, root);
  return config;
}

}  // namespace

Config load_config_string(const std::string& yaml_text, const std::string& source_name) {
  const YamlReader reader(source_name);
  return read_config(reader, reader.parse(yaml_text));
}

Config load_config_file(const std::string& path) {
  const auto fail = [&path](int error) {
    throw ConfigError(path + ": cannot read the configuration file: " + std::strerror(error));
  };
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) fail(errno);
  std::string text;
  char buffer[65536];
  for (;;) {
    const size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    text.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get())) fail(errno != 0 ? errno : EIO);
  return load_config_string(text, path);
}

Config load_default_config() {
  return load_config_string(std::string(default_config_yaml()), "<embedded default>");
}

}  // namespace rill::config
