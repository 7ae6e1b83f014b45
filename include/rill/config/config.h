#pragma once
// The validated configuration, as the rest of Rill sees it. Parsed from YAML by
// config/config_loader.cpp; every field has the default documented in conf/rill.yaml.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "rill/core/access_rule.h"
#include "rill/core/log_config.h"

namespace rill::config {

using Duration = std::chrono::milliseconds;

// Raised for any invalid configuration. what() reads "FILE:LINE:COL: message" — the message says
// what was expected (and "did you mean 'x'?" for a misspelt key).
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ListenAddress {
  std::string host;  // "0.0.0.0", "127.0.0.1", "::1" (no brackets), "::"
  uint16_t port = 0;
  std::string to_string() const;  // "0.0.0.0:1935", "[::1]:1935"
  bool operator==(const ListenAddress&) const = default;
};

using LogConfig = core::LogConfig;

struct RtmpConfig {
  std::vector<ListenAddress> listen{{"0.0.0.0", 1935}};
  uint32_t chunk_size = 4096;                  // outgoing chunk size we announce
  uint32_t max_chunk_size = 65536;             // largest Set Chunk Size accepted from a peer
  size_t max_message_size = 16 * 1024 * 1024;  // largest RTMP message accepted
  Duration handshake_timeout{10000};
  Duration idle_timeout{30000};    // no bytes from a peer for this long: close
  Duration ping_interval{10000};   // PingRequest to idle-looking peers
  uint32_t ack_window = 2500000;   // Window Acknowledgement Size we announce
  size_t max_connections = 10000;  // per worker
  size_t send_buffer = 32 * 1024;  // SO_SNDBUF of accepted sockets; 0 = kernel autotuning (net/send_buffer.h)
  size_t notsent_lowat = 0;        // TCP_NOTSENT_LOWAT of accepted sockets; 0 = not set
  size_t max_connections_per_ip = 0;  // per worker, 0 = no limit
  // RTMPS (docs/security.md): TLS listeners and the PEM chain and key they present, read by
  // every new worker (so a reload re-reads them).
  std::vector<ListenAddress> tls_listen;
  std::optional<std::string> tls_cert;
  std::optional<std::string> tls_key;
  bool operator==(const RtmpConfig&) const = default;
};

struct HttpConfig {
  std::vector<ListenAddress> listen{{"0.0.0.0", 8080}};
  size_t max_header_size = 8 * 1024;
  size_t max_body_size = 64 * 1024;
  Duration timeout{30000};            // read/write timeout of normal requests
  size_t max_connections = 10000;     // per worker
  std::string cors_origin = "*";      // Access-Control-Allow-Origin on stream responses; "" = off
  size_t send_buffer = 32 * 1024;     // SO_SNDBUF of HTTP-FLV players; 0 = kernel autotuning
  size_t notsent_lowat = 0;           // TCP_NOTSENT_LOWAT of HTTP-FLV players; 0 = not set
  size_t max_connections_per_ip = 0;  // per worker, 0 = no limit
  // Large bodies by sendfile from a memory file (http/http_file_bodies.h). Off by default: on
  // loopback it measured 1.1x the CPU of sending from memory (docs/hls.md).
  bool sendfile = false;
  // HTTPS for HTTP-FLV, HLS and the API (docs/security.md), as rtmp.tls_*.
  std::vector<ListenAddress> tls_listen;
  std::optional<std::string> tls_cert;
  std::optional<std::string> tls_key;
  bool operator==(const HttpConfig&) const = default;
};

enum class HlsContainer : uint8_t { Ts, Fmp4 };

struct HlsConfig {
  bool enabled = false;
  Duration fragment{2000};   // target segment duration: cut at the first keyframe after it
  uint32_t window = 5;       // segments in the playlist
  Duration max_fragment{0};  // forced cut without keyframe; 0 = 3 x fragment
  size_t max_segment_size = 64 * 1024 * 1024;
  HlsContainer container = HlsContainer::Ts;  // segment format (docs/hls.md)
  bool low_latency = false;                   // LL-HLS parts (implies fmp4)
  Duration part{200};                         // LL-HLS part target duration
  // Rendition groups by name suffix (docs/abr.md): streams NAME+suffix are the renditions of
  // NAME, whose NAME.m3u8 is then a multivariant playlist. Distinct, non-empty, in config order.
  std::vector<std::string> variant_suffixes;
  Duration rewind{0};  // live playlist reaches this far back into the recording (0: off; docs/hls.md)
  bool operator==(const HlsConfig&) const = default;
};

// The control plane (docs/api.md): JSON API, /metrics and /console/ on their own listeners.
struct ApiConfig {
  std::vector<ListenAddress> listen{{"127.0.0.1", 8081}};  // [] disables the API
  std::vector<ListenAddress> tls_listen;                   // HTTPS, with http.tls_cert and http.tls_key
  std::optional<std::string> token;       // set: every request needs "Authorization: Bearer TOKEN"
  std::optional<std::string> token_file;  // the token read from this file (at start and reload)
  bool metrics_public = false;            // /metrics answers without the token
  bool operator==(const ApiConfig&) const = default;
};

// Streams shared across worker processes (docs/workers.md).
struct WorkerLinkConfig {
  // A worker link to the owning worker stays open this long after its last local player left.
  Duration idle_grace{5000};
  bool operator==(const WorkerLinkConfig&) const = default;
};

// Who may publish and play an app (docs/security.md). Parsed by config/security_config.cpp.
enum class AuthMode { Open, Token, Callback, TokenAndCallback };
struct AuthConfig {
  std::optional<std::string> secret;       // the HMAC key (from `secret`, or read from secret_file)
  std::optional<std::string> secret_file;  // re-read on every load (reload)
  AuthMode publish = AuthMode::Open;
  AuthMode play = AuthMode::Open;
  bool operator==(const AuthConfig&) const = default;
};

// nginx-rtmp notify-module callbacks; nullopt = not called.
struct CallbacksConfig {
  std::optional<std::string> on_publish;
  std::optional<std::string> on_play;
  std::optional<std::string> on_publish_done;
  std::optional<std::string> on_play_done;
  std::optional<std::string> on_update;
  std::optional<std::string> on_record_done;  // after each recording file is closed (docs/recording.md)
  Duration update_interval{30000};
  Duration timeout{3000};
  // https:// callback URLs: the server is verified against this CA file (PEM), or the system's
  // trust store when unset.
  std::optional<std::string> tls_ca_file;
  bool operator==(const CallbacksConfig&) const = default;
};

// Recording of an app's streams to files (docs/recording.md; parsed by record_config.cpp).
// Manual: video and audio, but only between a start and a stop of the API (docs/recording.md).
enum class RecordMode : uint8_t { Off, All, Video, Audio, Manual };
enum class RecordFormat : uint8_t { Fmp4, Flv };
struct RecordRetention {
  Duration max_age{0};     // 0: no age limit
  uint64_t max_bytes = 0;  // 0: no size limit
  bool operator==(const RecordRetention&) const = default;
};
struct RecordConfig {
  RecordMode mode = RecordMode::Off;
  RecordFormat format = RecordFormat::Fmp4;
  // {app}, {name}, {start} / {start:STRFTIME}; the extension (.mp4, .flv) is added.
  std::string path = "/var/lib/rill/recordings/{app}/{name}/{start:%Y-%m-%d_%H-%M-%S}";
  Duration segment{0};    // rotate at the first keyframe after this long; 0: one file per publish
  uint64_t max_size = 0;  // rotate also at the first keyframe past this size; 0: no limit
  Duration flush{1000};   // data reaches the file at least this often (stream time)
  RecordRetention retention;
  bool serve = true;  // the files under /recordings/... and recording.m3u8 (docs/recording.md)
  bool enabled() const { return mode != RecordMode::Off; }
  bool operator==(const RecordConfig&) const = default;
};

// Per-application options: apps.NAME in the YAML.
// Cluster keys of an app (docs/cluster.md; parsed in cluster_config.cpp).
// An RTMP URL of the cluster keys: rtmp://host[:port]/app[/name] or rtmps:// (TLS, port 443).
struct RtmpUrl {
  std::string host;
  uint16_t port = 1935;
  bool tls = false;  // rtmps://
  // rtmps://: the server's certificate is verified for `host` against tls_ca_file (PEM) or the
  // system's trust store; tls_verify = false accepts any (the relay's `tls_verify: false`).
  bool tls_verify = true;
  std::optional<std::string> tls_ca_file;
  std::string app;
  std::string name;  // empty: the stream's own name is appended
  std::string text;  // as written
  bool operator==(const RtmpUrl&) const = default;
};
enum class EdgePublish : uint8_t { Forward, Local, Refuse };
struct EdgeConfig {
  std::vector<RtmpUrl> origins;  // tried in this order
  Duration connect_timeout{2000};
  Duration idle_close{10000};
  EdgePublish publish = EdgePublish::Forward;
  bool operator==(const EdgeConfig&) const = default;
};
struct PushTarget {
  RtmpUrl url;
  Duration reconnect{2000};
  bool operator==(const PushTarget&) const = default;
};
struct PullSource {
  RtmpUrl url;
  std::string name;  // the local stream name
  bool operator==(const PullSource&) const = default;
};

// apps.NAME.exec: a command run for a stream's events (docs/abr.md; parsed by exec_config.cpp).
enum class ExecEvent : uint8_t { Publish, PublishDone, RecordDone };
struct ExecHook {
  ExecEvent on = ExecEvent::Publish;
  std::vector<std::string> command;  // argv; {app} {name} {query} {addr} {path} {hop} expanded
  Duration restart{0};               // publish hooks: restart after an exit (0: never)
  std::vector<std::string> names;    // the stream names it runs for ('*' wildcards); empty: all
  bool operator==(const ExecHook&) const = default;
};

struct AppConfig {
  std::string name;
  bool gop_cache = true;
  size_t gop_cache_max_bytes = 32 * 1024 * 1024;
  size_t gop_cache_max_frames = 2048;
  // A player of a stream with no publisher waits this long for one (0: answer StreamNotFound /
  // 404 at once).
  Duration play_wait{0};
  // After the publisher leaves, players stay attached this long waiting for it to come back.
  Duration publisher_idle_timeout{10000};
  // Per-subscriber output queue bounds: past soft, drop video until the next keyframe;
  // past hard, disconnect the subscriber.
  size_t queue_soft_bytes = 4 * 1024 * 1024;
  size_t queue_hard_bytes = 16 * 1024 * 1024;
  Duration queue_soft_duration{2000};
  Duration queue_hard_duration{8000};
  HlsConfig hls;
  RecordConfig record;
  AuthConfig auth;
  std::vector<core::AccessRule> access;  // first match wins; none matching: allowed
  CallbacksConfig callbacks;
  std::optional<EdgeConfig> edge;  // present: this app is an edge of these origins
  std::vector<PushTarget> push;    // every stream of the app is forwarded to each
  std::vector<PullSource> pull;    // static ingest, kept pulled
  std::vector<ExecHook> exec;      // commands run on publish / publish_done / record_done
  bool operator==(const AppConfig&) const = default;
};

struct Config {
  uint32_t workers = 0;  // 0 means "auto" in the file; see resolved_workers()
  std::optional<std::string> user;
  std::optional<std::string> pid_file;
  std::string runtime_dir = "/tmp/rill";
  Duration shutdown_timeout{10000};  // graceful stop / old workers after reload: drain at most this long
  // `merge_writes: auto` (default): writes to players are held only while the worker is busy, for
  // up to merge_writes_max (net::MergePolicy). A duration: 0 sends every write in the loop
  // iteration that produced it (no added latency); > 0 holds writes that long and merges them
  // (fewer syscalls, more latency), SRS-style. merge_writes.cpp parses both keys.
  bool merge_writes_auto = true;
  Duration merge_writes{0};
  Duration merge_writes_max{80};
  // `send_method`: how a worker hands a flush batch's writes to the kernel — one io_uring
  // submission for the batch (default: measured cheaper, docs/benchmarks.md) or one sendmsg per
  // connection (net::SendRing; where the kernel or the build has no io_uring the worker logs why
  // and keeps sendmsg).
  enum class SendMethod : uint8_t { Sendmsg, IoUring };
  SendMethod send_method = SendMethod::IoUring;
  LogConfig log;
  RtmpConfig rtmp;
  HttpConfig http;
  ApiConfig api;
  WorkerLinkConfig worker_link;  // YAML `worker_link:` (old name `relay:`)
  std::map<std::string, AppConfig> apps;
  uint32_t exec_max = 64;   // exec hook children alive at once in the server (shared out: workers)
  std::string source_name;  // file path, or "<embedded default>"

  uint32_t resolved_workers() const;  // workers, or the number of online cores for auto
  const AppConfig* find_app(const std::string& name) const;
  // Field-by-field equality (source_name included), e.g. to see what a reload changes.
  bool operator==(const Config&) const = default;
};

// Parse and validate. Throws ConfigError.
Config load_config_file(const std::string& path);
Config load_config_string(const std::string& yaml_text, const std::string& source_name);
Config load_default_config();  // the embedded conf/rill.yaml

// Helpers exposed for tests and for other YAML-driven pieces.
Duration parse_duration(const std::string& text);     // "2s", "500ms", "1m", "1h"; throws ConfigError
size_t parse_size(const std::string& text);           // "64KiB", "16MiB", "1GiB", "512", "4k"? (see docs)
ListenAddress parse_listen(const std::string& text);  // "0.0.0.0:1935", "[::1]:1935", "1935"

}  // namespace rill::config
