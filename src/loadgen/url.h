#pragma once
// rill-bench: the URLs it connects to, and name resolution.
//   rtmp://host[:port]/app[/inst...]/stream[?query]   (port 1935)
//   http://host[:port]/path[?query]                    (port 80)
// For RTMP the stream name is the last path segment (with its query) and the application is
// everything between the authority and it, as ffmpeg and OBS split it.
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rill::loadgen {

struct Url {
  std::string scheme;  // "rtmp" or "http"
  std::string host;
  uint16_t port = 0;
  std::string path;    // http: "/..." with query; rtmp: "/app/stream?query"
  // RTMP only.
  std::string app;
  std::string stream;  // with its query string, if any

  // rtmp://host:port/app (what goes into connect's tcUrl).
  std::string tc_url() const;
  // scheme://host:port + path.
  std::string to_string() const;
  std::string host_header() const;  // "host:port" (or "host" on the default port)
};

// Parses an rtmp:// or http:// URL; nullopt with *error set when malformed.
std::optional<Url> parse_url(std::string_view text, std::string* error);

// URL of connection k when N > 1 connections publish: the stream name gets "_k" (before any
// query string): rtmp://h/live/s -> rtmp://h/live/s_0.
Url with_stream_suffix(const Url& url, int k);

// Resolves a relative reference (RFC 3986 section 5, the cases an HLS playlist uses: absolute
// URL, absolute path, relative path) against an http base URL.
std::optional<Url> resolve_reference(const Url& base, std::string_view ref, std::string* error);

// A resolved IPv4/IPv6 address for connect().
struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
};
std::optional<Endpoint> resolve(const std::string& host, uint16_t port, std::string* error);

}  // namespace rill::loadgen
