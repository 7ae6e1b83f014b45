// Tests of the configuration: parsing, defaults, the embedded default, value syntaxes, and the
// location and wording of every kind of error.
#include "rill/config/config.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "config_test_util.h"
#include "rill/config/default_config.h"
#include "rill/config/units.h"
#include "rill/config/yaml_reader.h"

namespace rill::config {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;
constexpr size_t kGiB = 1024 * kMiB;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::string kSourceDir = RILL_SOURCE_DIR;
const std::string kDefaultFile = kSourceDir + "/conf/rill.yaml";

// ---- valid files -------------------------------------------------------------------------------

TEST(Config, MinimalFileTakesEveryDefault) {
  const Config c = load("apps:\n  live:\n");
  Config expected;
  expected.source_name = "t.yaml";
  AppConfig live;
  live.name = "live";
  expected.apps.emplace("live", live);
  EXPECT_EQ(c, expected);
}

TEST(Config, DefaultValues) {
  const Config c = load(kApps);
  EXPECT_EQ(c.workers, 0u);
  EXPECT_FALSE(c.user);
  EXPECT_FALSE(c.pid_file);
  EXPECT_EQ(c.runtime_dir, "/tmp/rill");
  EXPECT_EQ(c.shutdown_timeout, seconds(10));
  EXPECT_EQ(c.log.level, "info");
  EXPECT_FALSE(c.log.file);
  EXPECT_FALSE(c.log.access_log);
  EXPECT_EQ(c.rtmp.listen, (std::vector<ListenAddress>{{"0.0.0.0", 1935}}));
  EXPECT_EQ(c.rtmp.chunk_size, 4096u);
  EXPECT_EQ(c.rtmp.max_chunk_size, 65536u);
  EXPECT_EQ(c.rtmp.max_message_size, 16 * kMiB);
  EXPECT_EQ(c.rtmp.handshake_timeout, seconds(10));
  EXPECT_EQ(c.rtmp.idle_timeout, seconds(30));
  EXPECT_EQ(c.rtmp.ping_interval, seconds(10));
  EXPECT_EQ(c.rtmp.ack_window, 2500000u);
  EXPECT_EQ(c.rtmp.max_connections, 10000u);
  EXPECT_EQ(c.http.listen, (std::vector<ListenAddress>{{"0.0.0.0", 8080}}));
  EXPECT_EQ(c.http.max_header_size, 8 * kKiB);
  EXPECT_EQ(c.http.max_body_size, 64 * kKiB);
  EXPECT_EQ(c.http.timeout, seconds(30));
  EXPECT_EQ(c.http.max_connections, 10000u);
  EXPECT_EQ(c.http.cors_origin, "*");
  EXPECT_FALSE(c.http.sendfile);
  EXPECT_EQ(c.rtmp.send_buffer, 32 * kKiB);
  EXPECT_EQ(c.http.send_buffer, 32 * kKiB);
  ASSERT_EQ(c.apps.size(), 1u);
  const AppConfig& live = c.apps.at("live");
  EXPECT_EQ(live.name, "live");
  EXPECT_TRUE(live.gop_cache);
  EXPECT_EQ(live.gop_cache_max_bytes, 32 * kMiB);
  EXPECT_EQ(live.gop_cache_max_frames, 2048u);
  EXPECT_EQ(live.play_wait, milliseconds(0));
  EXPECT_EQ(live.publisher_idle_timeout, seconds(10));
  EXPECT_EQ(live.queue_soft_bytes, 4 * kMiB);
  EXPECT_EQ(live.queue_hard_bytes, 16 * kMiB);
  EXPECT_EQ(live.queue_soft_duration, seconds(2));
  EXPECT_EQ(live.queue_hard_duration, seconds(8));
  EXPECT_FALSE(live.hls.enabled);
  EXPECT_EQ(live.hls.fragment, seconds(2));
  EXPECT_EQ(live.hls.window, 5u);
  EXPECT_EQ(live.hls.max_fragment, milliseconds(0));
  EXPECT_EQ(live.hls.max_segment_size, 64 * kMiB);
  EXPECT_EQ(c.find_app("live"), &live);
  EXPECT_EQ(c.find_app("nope"), nullptr);
}

TEST(Config, EmptyAppMapAndNullAppAreTheSame) {
  EXPECT_EQ(load("apps: {live: {}}").apps, load("apps:\n  live:\n").apps);
  EXPECT_EQ(load("apps: {live: ~}").apps, load("apps:\n  live: null\n").apps);
}

TEST(Config, FullFileSetsEveryKey) {
  const Config c = load(R"(
workers: 4
user: rill
pid_file: /run/rill.pid
runtime_dir: /run/rill
shutdown_timeout: 1m
log: { level: debug, file: /var/log/rill/rill.log, access_log: /var/log/rill/access.log }
rtmp:
  listen: ["127.0.0.1:1936", "[::1]:1936"]
  chunk_size: 60000
  max_chunk_size: 1MiB
  max_message_size: 8MiB
  handshake_timeout: 5s
  idle_timeout: 1m
  ping_interval: 0s
  ack_window: 5000000
  max_connections: 500
http:
  listen: "8081"
  max_header_size: 16KiB
  max_body_size: 1MiB
  timeout: 15s
  max_connections: 600
  cors_origin: ""
  sendfile: true
worker_link: { idle_grace: 1s }
apps:
  live:
    gop_cache: false
    gop_cache_max_bytes: 8MiB
    gop_cache_max_frames: 100
    play_wait: 3s
    publisher_idle_timeout: 500ms
    queue: { soft_bytes: 1MiB, hard_bytes: 2MiB, soft_duration: 1s, hard_duration: 3s }
    hls: { enabled: true, fragment: 4s, window: 6, max_fragment: 10s, max_segment_size: 32MiB }
  radio.2-x_y: {}
)");
  EXPECT_EQ(c.source_name, "t.yaml");
  EXPECT_EQ(c.workers, 4u);
  EXPECT_EQ(c.resolved_workers(), 4u);
  EXPECT_EQ(c.user, "rill");
  EXPECT_EQ(c.pid_file, "/run/rill.pid");
  EXPECT_EQ(c.runtime_dir, "/run/rill");
  EXPECT_EQ(c.shutdown_timeout, minutes(1));
  EXPECT_EQ(c.log.level, "debug");
  EXPECT_EQ(c.log.file, "/var/log/rill/rill.log");
  EXPECT_EQ(c.log.access_log, "/var/log/rill/access.log");
  EXPECT_EQ(c.rtmp.listen, (std::vector<ListenAddress>{{"127.0.0.1", 1936}, {"::1", 1936}}));
  EXPECT_EQ(c.rtmp.chunk_size, 60000u);
  EXPECT_EQ(c.rtmp.max_chunk_size, 1 * kMiB);
  EXPECT_EQ(c.rtmp.max_message_size, 8 * kMiB);
  EXPECT_EQ(c.rtmp.handshake_timeout, seconds(5));
  EXPECT_EQ(c.rtmp.idle_timeout, minutes(1));
  EXPECT_EQ(c.rtmp.ping_interval, milliseconds(0));
  EXPECT_EQ(c.rtmp.ack_window, 5000000u);
  EXPECT_EQ(c.rtmp.max_connections, 500u);
  EXPECT_EQ(c.http.listen, (std::vector<ListenAddress>{{"0.0.0.0", 8081}}));
  EXPECT_EQ(c.http.max_header_size, 16 * kKiB);
  EXPECT_EQ(c.http.max_body_size, 1 * kMiB);
  EXPECT_EQ(c.http.timeout, seconds(15));
  EXPECT_EQ(c.http.max_connections, 600u);
  EXPECT_EQ(c.http.cors_origin, "");
  EXPECT_TRUE(c.http.sendfile);
  EXPECT_EQ(c.worker_link.idle_grace, seconds(1));
  ASSERT_EQ(c.apps.size(), 2u);
  const AppConfig& live = c.apps.at("live");
  EXPECT_EQ(live.name, "live");
  EXPECT_FALSE(live.gop_cache);
  EXPECT_EQ(live.gop_cache_max_bytes, 8 * kMiB);
  EXPECT_EQ(live.gop_cache_max_frames, 100u);
  EXPECT_EQ(live.play_wait, seconds(3));
  EXPECT_EQ(live.publisher_idle_timeout, milliseconds(500));
  EXPECT_EQ(live.queue_soft_bytes, 1 * kMiB);
  EXPECT_EQ(live.queue_hard_bytes, 2 * kMiB);
  EXPECT_EQ(live.queue_soft_duration, seconds(1));
  EXPECT_EQ(live.queue_hard_duration, seconds(3));
  EXPECT_TRUE(live.hls.enabled);
  EXPECT_EQ(live.hls.fragment, seconds(4));
  EXPECT_EQ(live.hls.window, 6u);
  EXPECT_EQ(live.hls.max_fragment, seconds(10));
  EXPECT_EQ(live.hls.max_segment_size, 32 * kMiB);
  const AppConfig* radio = c.find_app("radio.2-x_y");
  ASSERT_NE(radio, nullptr);
  EXPECT_EQ(radio->name, "radio.2-x_y");
  EXPECT_TRUE(radio->gop_cache);
  EXPECT_FALSE(radio->hls.enabled);
}

TEST(Config, SendBuffer) {
  Config c = load("apps:\n  live:\nrtmp:\n  send_buffer: 16KiB\nhttp:\n  send_buffer: 0B\n");
  EXPECT_EQ(c.rtmp.send_buffer, 16 * kKiB);
  EXPECT_EQ(c.http.send_buffer, 0u);    // kernel autotuning
  EXPECT_EQ(c.rtmp.notsent_lowat, 0u);  // not set by default
  Config lowat = load("apps:\n  live:\nrtmp:\n  notsent_lowat: 16KiB\nhttp:\n  notsent_lowat: 1MiB\n");
  EXPECT_EQ(lowat.rtmp.notsent_lowat, 16 * kKiB);
  EXPECT_EQ(lowat.http.notsent_lowat, kMiB);
  EXPECT_THROW(load("apps:\n  live:\nhttp:\n  notsent_lowat: 65MiB\n"), ConfigError);
  EXPECT_THROW(load("apps:\n  live:\nrtmp:\n  send_buffer: 65MiB\n"), ConfigError);
}

TEST(Config, EmptyListenListDisablesAProtocol) {
  const Config c = load("rtmp: {listen: []}\n" + kApps);
  EXPECT_TRUE(c.rtmp.listen.empty());
  EXPECT_EQ(c.http.listen.size(), 1u);
  EXPECT_CONTAINS(error_of("rtmp: {listen: []}\nhttp: {listen: []}\n" + kApps), "no listen address at all");
}

TEST(Config, WorkersAutoResolvesToOnlineCores) {
  const Config c = load("workers: auto\n" + kApps);
  EXPECT_EQ(c.workers, 0u);
  EXPECT_GE(c.resolved_workers(), 1u);
  EXPECT_EQ(load("workers: 1024\n" + kApps).workers, 1024u);
  EXPECT_CONTAINS(error_of("workers: 0\n" + kApps),
                  "t.yaml:1:10: workers: must be between 1 and 1024, got 0");
  EXPECT_CONTAINS(error_of("workers: 1025\n" + kApps), "must be between 1 and 1024");
  EXPECT_CONTAINS(error_of("workers: -2\n" + kApps), "must be between 1 and 1024, got -2");
  EXPECT_CONTAINS(error_of("workers: many\n" + kApps),
                  "workers: expected auto or an integer between 1 and 1024, got 'many'");
}

// ---- the embedded default ------------------------------------------------------------------

TEST(Config, EmbeddedDefaultIsConfRillYaml) {
  const std::string on_disk = read_file(kDefaultFile);
  ASSERT_FALSE(on_disk.empty()) << kDefaultFile;
  EXPECT_EQ(std::string(default_config_yaml()), on_disk);

  const Config embedded = load_default_config();
  Config from_file = load_config_file(kDefaultFile);
  EXPECT_EQ(embedded.source_name, "<embedded default>");
  EXPECT_EQ(from_file.source_name, kDefaultFile);
  from_file.source_name = embedded.source_name;
  EXPECT_EQ(embedded, from_file);
}

TEST(Config, EmbeddedDefaultValues) {
  // The default file states the built-in defaults, plus the `live` app with HLS on.
  Config expected;
  expected.source_name = "<embedded default>";
  AppConfig live;
  live.name = "live";
  live.hls.enabled = true;
  expected.apps.emplace("live", live);
  EXPECT_EQ(load_default_config(), expected);
}

TEST(Config, EmbeddedDefaultDocumentsEveryKey) {
  const std::string text(default_config_yaml());
  std::istringstream keys(R"(
    workers user pid_file runtime_dir shutdown_timeout merge_writes merge_writes_max send_method
    log level file access_log
    rtmp listen chunk_size max_chunk_size max_message_size handshake_timeout idle_timeout
         ping_interval ack_window max_connections
    http listen max_header_size max_body_size timeout max_connections cors_origin
    worker_link idle_grace
    apps gop_cache gop_cache_max_bytes gop_cache_max_frames play_wait publisher_idle_timeout
         queue soft_bytes hard_bytes soft_duration hard_duration
         hls enabled fragment window max_fragment max_segment_size container low_latency part
         record mode format path segment max_size flush retention)");
  for (std::string key; keys >> key;) EXPECT_CONTAINS(text, key + ":");
}

// ---- listen addresses ------------------------------------------------------------------------

TEST(Listen, Forms) {
  EXPECT_EQ(parse_listen("0.0.0.0:1935"), (ListenAddress{"0.0.0.0", 1935}));
  EXPECT_EQ(parse_listen("127.0.0.1:80"), (ListenAddress{"127.0.0.1", 80}));
  EXPECT_EQ(parse_listen("1935"), (ListenAddress{"0.0.0.0", 1935}));
  EXPECT_EQ(parse_listen("[::1]:1935"), (ListenAddress{"::1", 1935}));
  EXPECT_EQ(parse_listen("[::]:8080"), (ListenAddress{"::", 8080}));
  EXPECT_EQ(parse_listen("[0:0::0:1]:8080"), (ListenAddress{"::1", 8080}));  // canonical
  EXPECT_EQ(parse_listen("localhost:1"), (ListenAddress{"127.0.0.1", 1}));
  EXPECT_EQ(parse_listen("*:65535"), (ListenAddress{"0.0.0.0", 65535}));
}

TEST(Listen, ToString) {
  EXPECT_EQ((ListenAddress{"0.0.0.0", 1935}).to_string(), "0.0.0.0:1935");
  EXPECT_EQ((ListenAddress{"::1", 1935}).to_string(), "[::1]:1935");
}

TEST(Listen, Errors) {
  const auto err = [](const std::string& text) { return error_of_call([&] { parse_listen(text); }); };
  EXPECT_CONTAINS(err("example.com:1935"), "host 'example.com' in 'example.com:1935' is not a numeric");
  EXPECT_CONTAINS(err("256.0.0.1:1935"), "is not a numeric");
  EXPECT_CONTAINS(err("[fe80::zz]:1935"), "not a numeric IPv6 address");
  EXPECT_CONTAINS(err("0.0.0.0:0"), "port must be between 1 and 65535, got 0");
  EXPECT_CONTAINS(err("0.0.0.0:65536"), "port must be between 1 and 65535, got 65536");
  EXPECT_CONTAINS(err("0.0.0.0:99999999999999999999"), "port must be between 1 and 65535");
  EXPECT_CONTAINS(err("0"), "port must be between 1 and 65535, got 0");
  EXPECT_CONTAINS(err("0.0.0.0:http"), "port must be a number");
  EXPECT_CONTAINS(err("0.0.0.0:-1"), "port must be a number");
  EXPECT_CONTAINS(err("0.0.0.0"), "missing port in '0.0.0.0'");
  EXPECT_CONTAINS(err("localhost"), "missing port in 'localhost'");
  EXPECT_CONTAINS(err("0.0.0.0:"), "missing port");
  EXPECT_CONTAINS(err("[::1]"), "missing port in '[::1]'");
  EXPECT_CONTAINS(err("[::1]1935"), "missing port");
  EXPECT_CONTAINS(err("[::1:1935"), "missing ']'");
  EXPECT_CONTAINS(err("::1:1935"), "IPv6 addresses must be written in brackets");
  EXPECT_CONTAINS(err(""), "empty listen address");
}

TEST(Listen, InTheFile) {
  EXPECT_EQ(load("rtmp: {listen: \"localhost:1940\"}\n" + kApps).rtmp.listen,
            (std::vector<ListenAddress>{{"127.0.0.1", 1940}}));
  EXPECT_EQ(load("rtmp: {listen: 1940}\n" + kApps).rtmp.listen,
            (std::vector<ListenAddress>{{"0.0.0.0", 1940}}));
  EXPECT_EQ(load("rtmp:\n  listen:\n    - \"*:1940\"\n    - \"[::]:1940\"\n" + kApps).rtmp.listen,
            (std::vector<ListenAddress>{{"0.0.0.0", 1940}, {"::", 1940}}));

  EXPECT_CONTAINS(error_of("rtmp:\n  listen: [\"1.2.3.4:1\", \"nohost:1935\"]\n" + kApps),
                  "t.yaml:2:25: rtmp.listen[1]: host 'nohost' in 'nohost:1935' is not a numeric");
  EXPECT_CONTAINS(error_of("rtmp:\n  listen: \"0.0.0.0:70000\"\n" + kApps),
                  "t.yaml:2:11: rtmp.listen: port must be between 1 and 65535, got 70000");
  EXPECT_CONTAINS(error_of("rtmp:\n  listen: {a: 1}\n" + kApps),
                  "t.yaml:2:11: rtmp.listen: expected a string or a list of strings, got a map");
  EXPECT_CONTAINS(error_of("rtmp:\n  listen: [[1]]\n" + kApps),
                  "t.yaml:2:12: rtmp.listen[0]: expected a string, got a list");
}

TEST(Listen, DuplicatesAndOverlaps) {
  EXPECT_CONTAINS(error_of("rtmp:\n  listen: [\"1935\", \"0.0.0.0:1935\"]\n" + kApps),
                  "t.yaml:2:20: rtmp.listen[1]: duplicate listen address 0.0.0.0:1935 "
                  "(rtmp.listen[0], line 2)");
  EXPECT_CONTAINS(error_of("rtmp:\n  listen: [\"1935\"]\nhttp:\n  listen: [\"*:1935\"]\n" + kApps),
                  "t.yaml:4:12: http.listen[0]: duplicate listen address 0.0.0.0:1935");
  // against rtmp's default 0.0.0.0:1935
  EXPECT_CONTAINS(error_of("http:\n  listen: [\"127.0.0.1:1935\"]\n" + kApps),
                  "t.yaml:2:12: http.listen[0]: listen address 127.0.0.1:1935 overlaps 0.0.0.0:1935 "
                  "(the default of rtmp.listen)");
  EXPECT_CONTAINS(
      error_of("http:\n  listen: \"1935\"\n" + kApps),
      "t.yaml:2:11: http.listen: duplicate listen address 0.0.0.0:1935 (the default of rtmp.listen)");
  EXPECT_CONTAINS(error_of("rtmp:\n  listen: [\"[::]:1\", \"[::1]:1\"]\n" + kApps), "overlaps [::]:1");
  // different families or ports do not clash
  EXPECT_EQ(
      load("rtmp:\n  listen: [\"0.0.0.0:1\", \"[::]:1\", \"127.0.0.1:2\"]\n" + kApps).rtmp.listen.size(), 3u);
}

// ---- durations and sizes -----------------------------------------------------------------------

TEST(Units, Durations) {
  EXPECT_EQ(parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(parse_duration("2s"), seconds(2));
  EXPECT_EQ(parse_duration("1m"), minutes(1));
  EXPECT_EQ(parse_duration("3h"), hours(3));
  EXPECT_EQ(parse_duration("7d"), hours(7 * 24));
  EXPECT_EQ(parse_duration("0s"), milliseconds(0));
  EXPECT_EQ(parse_duration("0"), milliseconds(0));
  EXPECT_EQ(parse_duration("007s"), seconds(7));

  const auto err = [](const std::string& text) { return error_of_call([&] { parse_duration(text); }); };
  EXPECT_CONTAINS(err("2"), "expected a duration like 2s or 500ms, got '2'");
  EXPECT_CONTAINS(err("2x"), "expected a duration like 2s or 500ms, got '2x'");
  EXPECT_CONTAINS(err("2 s"), "expected a duration");
  EXPECT_CONTAINS(err("1.5s"), "expected a duration");
  EXPECT_CONTAINS(err("s"), "expected a duration");
  EXPECT_CONTAINS(err(""), "expected a duration");
  EXPECT_CONTAINS(err("2S"), "expected a duration");
  EXPECT_CONTAINS(err("-1s"), "a duration cannot be negative, got '-1s'");
  EXPECT_CONTAINS(err("9223372036854775807h"), "duration '9223372036854775807h' is too large");
  EXPECT_CONTAINS(err("99999999999999999999999ms"), "is too large");
  EXPECT_EQ(parse_duration("9223372036854775807ms").count(), 9223372036854775807LL);
}

TEST(Units, Sizes) {
  EXPECT_EQ(parse_size("512"), 512u);
  EXPECT_EQ(parse_size("512B"), 512u);
  EXPECT_EQ(parse_size("64KiB"), 64 * kKiB);
  EXPECT_EQ(parse_size("64K"), 64 * kKiB);
  EXPECT_EQ(parse_size("64k"), 64 * kKiB);
  EXPECT_EQ(parse_size("16MiB"), 16 * kMiB);
  EXPECT_EQ(parse_size("16M"), 16 * kMiB);
  EXPECT_EQ(parse_size("2GiB"), 2 * kGiB);
  EXPECT_EQ(parse_size("0"), 0u);

  const auto err = [](const std::string& text) { return error_of_call([&] { parse_size(text); }); };
  EXPECT_CONTAINS(err("12XB"), "expected a size like 64KiB or 16MiB, got '12XB'");
  EXPECT_CONTAINS(err("abc"), "expected a size like 64KiB or 16MiB, got 'abc'");
  EXPECT_CONTAINS(err("1.5MiB"), "expected a size");
  EXPECT_CONTAINS(err("16MB"), "ambiguous size unit in '16MB': write MiB");
  EXPECT_CONTAINS(err("16kB"), "write KiB");
  EXPECT_CONTAINS(err("-1"), "a size cannot be negative, got '-1'");
  EXPECT_CONTAINS(err("18446744073709551616"), "size '18446744073709551616' is too large");
  EXPECT_CONTAINS(err("17179869184GiB"), "is too large");
}

TEST(Units, Format) {
  EXPECT_EQ(format_duration(milliseconds(0)), "0s");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(format_duration(seconds(90)), "90s");
  EXPECT_EQ(format_duration(hours(2)), "2h");
  EXPECT_EQ(format_size(0), "0B");
  EXPECT_EQ(format_size(1000), "1000B");
  EXPECT_EQ(format_size(64 * kKiB), "64KiB");
  EXPECT_EQ(format_size(16 * kMiB), "16MiB");
  EXPECT_EQ(format_size(3 * kGiB), "3GiB");
}

TEST(Units, InTheFileWithLocation) {
  EXPECT_CONTAINS(error_of(kLive + "    hls:\n      fragment: 2x\n"),
                  "t.yaml:4:17: apps.live.hls.fragment: expected a duration like 2s or 500ms, got '2x'");
  EXPECT_CONTAINS(error_of("shutdown_timeout: 10\n" + kApps),
                  "t.yaml:1:19: shutdown_timeout: expected a duration like 2s or 500ms, got '10'");
  EXPECT_CONTAINS(error_of("rtmp:\n  max_message_size: 16MB\n" + kApps),
                  "t.yaml:2:21: rtmp.max_message_size: ambiguous size unit");
  EXPECT_CONTAINS(error_of("rtmp:\n  max_message_size: 32MiB\n" + kApps),
                  "t.yaml:2:21: rtmp.max_message_size: must be between 1KiB and 16MiB, got 32MiB");
  EXPECT_CONTAINS(error_of("http:\n  timeout: 0s\n" + kApps),
                  "t.yaml:2:12: http.timeout: must be between 1ms and 24h, got 0s");
  EXPECT_CONTAINS(error_of("http:\n  max_body_size: -5\n" + kApps),
                  "http.max_body_size: a size cannot be negative, got '-5'");
  EXPECT_CONTAINS(error_of("http:\n  timeout: 99999999999999999999h\n" + kApps),
                  "http.timeout: duration '99999999999999999999h' is too large");
}

// ---- errors: location and wording ------------------------------------------------------------

TEST(ConfigErrors, UnknownKeyWithDidYouMean) {
  EXPECT_CONTAINS(error_of("rtmp:\n  lisen: 1935\n" + kApps),
                  "t.yaml:2:3: rtmp.lisen: unknown key; did you mean 'listen'?");
  EXPECT_CONTAINS(error_of("wokrers: 2\n" + kApps),
                  "t.yaml:1:1: wokrers: unknown key; did you mean 'workers'?");
  EXPECT_CONTAINS(error_of(kLive + "    hls: {enabeld: true}\n"),
                  "t.yaml:3:11: apps.live.hls.enabeld: unknown key; did you mean 'enabled'?");
  EXPECT_CONTAINS(error_of(kLive + "    queue:\n      soft_byte: 1MiB\n"),
                  "t.yaml:4:7: apps.live.queue.soft_byte: unknown key; did you mean 'soft_bytes'?");
}

TEST(ConfigErrors, UnknownKeyWithoutCloseMatch) {
  const std::string e = error_of("rtmp:\n  chunky_bacon: 1\n" + kApps);
  EXPECT_CONTAINS(e, "t.yaml:2:3: rtmp.chunky_bacon: unknown key; expected one of listen, chunk_size");
  EXPECT_EQ(e.find("did you mean"), std::string::npos);
  EXPECT_CONTAINS(error_of("foo: 1\n" + kApps), "t.yaml:1:1: foo: unknown key; expected one of workers");
}

TEST(ConfigErrors, AppOptionAtTheTopLevel) {
  EXPECT_CONTAINS(error_of("hls: {enabled: true}\n" + kApps),
                  "t.yaml:1:1: hls: unknown key at the top level; 'hls' is an app option");
  EXPECT_CONTAINS(error_of("apps:\n  gop_cache: true\n"),
                  "t.yaml:2:14: apps.gop_cache: expected a map of app options, got 'true' "
                  "('gop_cache' is an app option");
}

TEST(ConfigErrors, WrongTypes) {
  EXPECT_CONTAINS(error_of("rtmp:\n  chunk_size: abc\n" + kApps),
                  "t.yaml:2:15: rtmp.chunk_size: expected an integer, got 'abc'");
  EXPECT_CONTAINS(error_of("rtmp:\n  chunk_size: 4096.5\n" + kApps), "expected an integer, got '4096.5'");
  EXPECT_CONTAINS(error_of("rtmp:\n  chunk_size: 99999999999999999999\n" + kApps),
                  "rtmp.chunk_size: integer 99999999999999999999 is out of range");
  EXPECT_CONTAINS(error_of("rtmp:\n  chunk_size: 100\n" + kApps),
                  "rtmp.chunk_size: must be between 128 and 65536, got 100");
  EXPECT_CONTAINS(error_of("rtmp:\n  chunk_size: [1]\n" + kApps),
                  "t.yaml:2:15: rtmp.chunk_size: expected an integer, got a list");
  EXPECT_CONTAINS(error_of("rtmp:\n  chunk_size:\n" + kApps),
                  "t.yaml:2:3: rtmp.chunk_size: expected an integer, got null");
  EXPECT_CONTAINS(error_of(kLive + "    gop_cache: yes\n"),
                  "t.yaml:3:16: apps.live.gop_cache: expected true or false, got 'yes'");
  EXPECT_CONTAINS(error_of("rtmp: 1935\n" + kApps), "t.yaml:1:7: rtmp: expected a map, got '1935'");
  EXPECT_CONTAINS(error_of("log: [info]\n" + kApps), "t.yaml:1:6: log: expected a map, got a list");
  EXPECT_CONTAINS(error_of("user: {name: x}\n" + kApps),
                  "t.yaml:1:7: user: expected a string or null, got a map");
  EXPECT_CONTAINS(error_of("user: \"\"\n" + kApps), "user: must not be empty (write null for none)");
  EXPECT_CONTAINS(error_of("runtime_dir: null\n" + kApps),
                  "t.yaml:1:1: runtime_dir: expected a string, got null");
  EXPECT_CONTAINS(error_of("runtime_dir: /" + std::string(100, 'x') + "\n" + kApps),
                  "runtime_dir: must be at most 80 characters");
  EXPECT_CONTAINS(error_of("- a\n- b\n"),
                  "t.yaml:1:1: expected a map of settings at the top level, got a list");
  EXPECT_CONTAINS(error_of(kLive + "    hls: true\n"),
                  "t.yaml:3:10: apps.live.hls: expected a map, got 'true'");
}

TEST(ConfigErrors, LogLevel) {
  EXPECT_EQ(load("log: {level: trace}\n" + kApps).log.level, "trace");
  EXPECT_EQ(load("log: {level: \"off\"}\n" + kApps).log.level, "off");
  EXPECT_CONTAINS(error_of("log:\n  level: warning\n" + kApps),
                  "t.yaml:2:10: log.level: expected one of trace, debug, info, warn, error, "
                  "critical, off; got 'warning'; did you mean 'warn'?");
}

TEST(ConfigErrors, LogFormats) {
  const config::Config c = load("log: {format: json, access_format: json, redact_params: [apikey]}\n" + kApps);
  EXPECT_TRUE(c.log.json);
  EXPECT_EQ(c.log.access_format, core::AccessFormat::Json);
  EXPECT_EQ(c.log.redact_params, (std::vector<std::string>{"sign", "apikey"}));  // sign always
  EXPECT_FALSE(load(kApps).log.json);
  EXPECT_EQ(load(kApps).log.access_format, core::AccessFormat::Combined);
  EXPECT_CONTAINS(error_of("log:\n  access_format: nginx\n" + kApps),
                  "t.yaml:2:18: log.access_format: expected one of combined, json; got 'nginx'");
  EXPECT_CONTAINS(error_of("log:\n  format: xml\n" + kApps),
                  "t.yaml:2:11: log.format: expected one of text, json; got 'xml'");
  EXPECT_CONTAINS(error_of("log:\n  redact_params: [\"\"]\n" + kApps), "log.redact_params[0]");
}

TEST(ConfigErrors, Apps) {
  EXPECT_CONTAINS(error_of("workers: 2\n"), "t.yaml:1:1: apps: missing: at least one app is required");
  EXPECT_CONTAINS(error_of(""), "t.yaml:1:1: apps: missing: at least one app is required");
  EXPECT_CONTAINS(error_of("workers: 2\napps: {}\n"), "t.yaml:2:7: apps: at least one app is required");
  EXPECT_CONTAINS(error_of("workers: 2\napps:\n"), "t.yaml:2:1: apps: at least one app is required");
  EXPECT_CONTAINS(error_of("apps:\n  \"my app\": {}\n"), "t.yaml:2:3: apps.my app: invalid app name");
  EXPECT_CONTAINS(error_of("apps:\n  \"..\": {}\n"), "apps...: invalid app name");
  EXPECT_CONTAINS(error_of("apps: [live]\n"), "t.yaml:1:7: apps: expected a map, got a list");
}

TEST(Config, HlsContainerAndLowLatency) {
  const auto hls = [](const std::string& body) {
    return load("apps:\n  live:\n    hls: { enabled: true" + body + " }\n").find_app("live")->hls;
  };
  EXPECT_EQ(hls("").container, HlsContainer::Ts);
  EXPECT_FALSE(hls("").low_latency);
  EXPECT_EQ(hls("").part, milliseconds(200));
  EXPECT_EQ(hls(", container: fmp4").container, HlsContainer::Fmp4);
  const HlsConfig ll = hls(", low_latency: true, part: 300ms");
  EXPECT_TRUE(ll.low_latency);
  EXPECT_EQ(ll.container, HlsContainer::Fmp4);  // implied
  EXPECT_EQ(ll.part, milliseconds(300));
  EXPECT_CONTAINS(error_of("apps:\n  live:\n    hls: { container: mp4 }\n"), "container must be ts or fmp4");
  EXPECT_CONTAINS(error_of("apps:\n  live:\n    hls: { part: 50ms }\n"), "part");
  EXPECT_CONTAINS(error_of("apps:\n  live:\n    hls: { part: 3s }\n"), "part");
}

TEST(Config, HlsVariants) {
  const auto variants = [](const std::string& list) {
    return load("apps:\n  live:\n    hls:\n      enabled: true\n      variants: " + list + "\n")
        .find_app("live")
        ->hls.variant_suffixes;
  };
  EXPECT_TRUE(variants("[]").empty());
  EXPECT_EQ(variants("[{suffix: _hi}, {suffix: _mid}, {suffix: _lo}]"),
            (std::vector<std::string>{"_hi", "_mid", "_lo"}));
  const std::string head = "apps:\n  live:\n    hls:\n      variants:\n";
  EXPECT_CONTAINS(error_of(head + "        - {suffix: _hi}\n        - {suffix: \"\"}\n"),
                  "t.yaml:6:20: apps.live.hls.variants[1].suffix: a variant suffix must not be empty");
  EXPECT_CONTAINS(error_of(head + "        - {suffix: _hi}\n        - {suffix: _hi}\n"),
                  "t.yaml:6:20: apps.live.hls.variants[1].suffix: duplicate variant suffix '_hi'");
  EXPECT_CONTAINS(error_of(head + "        - {suffix: \"a b\"}\n"), "invalid variant suffix");
  EXPECT_CONTAINS(error_of(head + "        - {name: _hi}\n"), "variants[0]");
  EXPECT_CONTAINS(error_of(head + "        - {}\n"), "missing: suffix");
  EXPECT_CONTAINS(error_of(head + "        _hi\n"), "expected a list of maps");
}

TEST(ConfigErrors, DuplicateKey) {
  EXPECT_CONTAINS(error_of("workers: 1\nworkers: 2\n" + kApps), "t.yaml:2:1: workers: duplicate key");
  EXPECT_CONTAINS(error_of("apps:\n  live: {}\n  live: {}\n"), "t.yaml:3:3: apps.live: duplicate key");
}

TEST(ConfigErrors, SoftBoundAboveHardBound) {
  EXPECT_CONTAINS(error_of(kLive + "    queue:\n      soft_bytes: 32MiB\n"),
                  "t.yaml:4:19: apps.live.queue.soft_bytes: soft_bytes (32MiB) must not exceed "
                  "hard_bytes (16MiB)");
  EXPECT_CONTAINS(error_of(kLive + "    queue:\n      hard_duration: 1s\n"),
                  "t.yaml:4:22: apps.live.queue.hard_duration: soft_duration (2s) must not exceed "
                  "hard_duration (1s)");
  EXPECT_EQ(
      load(kLive + "    queue: {soft_bytes: 16MiB, hard_bytes: 16MiB}\n").apps.at("live").queue_soft_bytes,
      16 * kMiB);
  EXPECT_CONTAINS(error_of(kLive + "    hls: {fragment: 4s, max_fragment: 3s}\n"),
                  "apps.live.hls.max_fragment: max_fragment (3s) must be 0 or at least fragment (4s)");
}

TEST(ConfigErrors, YamlSyntax) {
  EXPECT_CONTAINS(error_of("rtmp:\n  listen: [\"1935\"\n" + kApps), "t.yaml:");
  EXPECT_CONTAINS(error_of("rtmp:\n  listen: [\"1935\"\n" + kApps),
                  "YAML syntax error: end of sequence flow not found");
  EXPECT_CONTAINS(error_of("rtmp: a: b\n"), "t.yaml:1:8: YAML syntax error: illegal map value");
  EXPECT_CONTAINS(error_of("http: {cors_origin: *}\n" + kApps),
                  "t.yaml:1:22: YAML syntax error: alias not found after *");
  // yaml-cpp 0.7's LoadAll loops forever on this one.
  EXPECT_CONTAINS(error_of("# comment\n, 1m\n" + kApps), "t.yaml:2:1: YAML syntax error: unexpected ','");
  EXPECT_CONTAINS(error_of(","), "t.yaml:1:1: YAML syntax error: unexpected ','");
  EXPECT_CONTAINS(error_of(kApps + "---\nworkers: 1\n"), "t.yaml:3:1: only one YAML document is allowed");
}

TEST(ConfigErrors, LoadFile) {
  const std::string missing = "/nonexistent/dir/rill.yaml";
  const std::string e = error_of_call([&] { load_config_file(missing); });
  EXPECT_CONTAINS(e, missing + ": cannot read the configuration file: No such file or directory");
  const std::string dir = error_of_call([&] { load_config_file(kSourceDir + "/conf"); });
  EXPECT_CONTAINS(dir, "/conf: cannot read the configuration file: Is a directory");
}

TEST(ConfigErrors, ErrorsInTheDefaultFileNameTheFile) {
  // An error found in a file is reported with the file's path.
  const std::string path = ::testing::TempDir() + "rill_config_test_bad.yaml";
  {
    std::ofstream out(path);
    out << "rtmp:\n  chunk_size: 1\n" << kApps;
  }
  EXPECT_CONTAINS(error_of_call([&] { load_config_file(path); }),
                  path + ":2:15: rtmp.chunk_size: must be between 128 and 65536, got 1");
  std::remove(path.c_str());
}

TEST(YamlReader, ClosestMatch) {
  const std::vector<std::string_view> keys = {"listen", "chunk_size", "max_chunk_size", "log"};
  EXPECT_EQ(closest_match("lisen", keys), "listen");
  EXPECT_EQ(closest_match("lsiten", keys), "listen");  // transposition
  EXPECT_EQ(closest_match("chunk_sise", keys), "chunk_size");
  EXPECT_EQ(closest_match("max_chunk", keys), "");
  EXPECT_EQ(closest_match("lg", keys), "log");
  EXPECT_EQ(closest_match("x", keys), "");
  EXPECT_EQ(closest_match("", keys), "");
}

}  // namespace
}  // namespace rill::config

namespace rill::config {
namespace {

// `relay:` is the old name of `worker_link:`: still read, but not both.
TEST(Config, WorkerLinkKeepsItsOldName) {
  EXPECT_EQ(load("relay: { idle_grace: 2s }\n" + kApps).worker_link.idle_grace, seconds(2));
  EXPECT_EQ(load("worker_link: { idle_grace: 3s }\n" + kApps).worker_link.idle_grace, seconds(3));
  EXPECT_CONTAINS(error_of("worker_link: { idle_grace: 3s }\nrelay: { idle_grace: 2s }\n" + kApps),
                  "'relay' is the old name of 'worker_link'");
}

TEST(Config, ApiSection) {
  const Config defaults = load(kApps);
  ASSERT_EQ(defaults.api.listen.size(), 1u);
  EXPECT_EQ(defaults.api.listen[0].to_string(), "127.0.0.1:8081");
  EXPECT_FALSE(defaults.api.token);
  EXPECT_FALSE(defaults.api.metrics_public);
  const Config c =
      load("api:\n  listen: [\"127.0.0.1:9000\", \"[::1]:9000\"]\n  token: s3cret\n  metrics_public: true\n" +
           kApps);
  ASSERT_EQ(c.api.listen.size(), 2u);
  EXPECT_EQ(c.api.listen[1].to_string(), "[::1]:9000");
  EXPECT_EQ(c.api.token, std::optional<std::string>("s3cret"));
  EXPECT_TRUE(c.api.metrics_public);
  EXPECT_TRUE(load("api:\n  listen: []\n" + kApps).api.listen.empty());
  EXPECT_NE(error_of("api:\n  token: \"\"\n" + kApps).find("token"), std::string::npos);
  EXPECT_NE(error_of("api:\n  token: \"a b\"\n" + kApps).find("printable"), std::string::npos);
  EXPECT_NE(error_of("api:\n  listen: [\"127.0.0.1:9000\", \"127.0.0.1:9000\"]\n" + kApps).find("duplicate"),
            std::string::npos);
  EXPECT_NE(error_of("api:\n  tokn: x\n" + kApps).find("tokn"), std::string::npos);
}

}  // namespace
}  // namespace rill::config
