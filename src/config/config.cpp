// The plain-data side of the configuration: listen addresses and the small queries on Config.
#include "rill/config/config.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <charconv>
#include <string_view>

namespace rill::config {
namespace {

constexpr std::string_view kListenForms = "expected host:port, [ipv6]:port or a port";

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

uint16_t parse_port(std::string_view port, const std::string& whole) {
  if (port.empty()) {
    throw ConfigError("missing port in " + quoted(whole) + " (" + std::string(kListenForms) + ")");
  }
  if (port.find_first_not_of("0123456789") != std::string_view::npos) {
    throw ConfigError("port must be a number between 1 and 65535, got " + quoted(port) + " in " +
                      quoted(whole));
  }
  unsigned value = 0;
  const auto result = std::from_chars(port.data(), port.data() + port.size(), value);
  if (result.ec != std::errc() || value < 1 || value > 65535) {
    throw ConfigError("port must be between 1 and 65535, got " + std::string(port) + " in " + quoted(whole));
  }
  return static_cast<uint16_t>(value);
}

// Canonical text of a numeric address of `family` (inet_ntop of inet_pton), or "" if it is not one.
std::string canonical_address(int family, const std::string& host) {
  unsigned char buf[sizeof(struct in6_addr)];
  if (inet_pton(family, host.c_str(), buf) != 1) return {};
  char text[INET6_ADDRSTRLEN];
  if (inet_ntop(family, buf, text, sizeof text) == nullptr) return {};
  return text;
}

}  // namespace

std::string ListenAddress::to_string() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

ListenAddress parse_listen(const std::string& text) {
  if (text.empty()) throw ConfigError("empty listen address (" + std::string(kListenForms) + ")");
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    return ListenAddress{"0.0.0.0", parse_port(text, text)};
  }
  if (text[0] == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos) {
      throw ConfigError("missing ']' in " + quoted(text) + " (" + std::string(kListenForms) + ")");
    }
    const std::string host = text.substr(1, close - 1);
    const std::string canonical = canonical_address(AF_INET6, host);
    if (canonical.empty()) {
      throw ConfigError("host " + quoted(host) + " in " + quoted(text) + " is not a numeric IPv6 address");
    }
    const std::string_view rest = std::string_view(text).substr(close + 1);
    if (rest.empty() || rest[0] != ':') {
      throw ConfigError("missing port in " + quoted(text) + " (" + std::string(kListenForms) + ")");
    }
    return ListenAddress{canonical, parse_port(rest.substr(1), text)};
  }
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) {
    throw ConfigError("missing port in " + quoted(text) + " (" + std::string(kListenForms) + ")");
  }
  if (text.find(':') != colon) {
    throw ConfigError("IPv6 addresses must be written in brackets, like [::1]:1935, got " + quoted(text));
  }
  const std::string host = text.substr(0, colon);
  const uint16_t port = parse_port(std::string_view(text).substr(colon + 1), text);
  if (host == "*") return ListenAddress{"0.0.0.0", port};
  if (host == "localhost") return ListenAddress{"127.0.0.1", port};
  const std::string canonical = canonical_address(AF_INET, host);
  if (canonical.empty()) {
    throw ConfigError("host " + quoted(host) + " in " + quoted(text) +
                      " is not a numeric IPv4 address, [IPv6] address, 'localhost' or '*'");
  }
  return ListenAddress{canonical, port};
}

uint32_t Config::resolved_workers() const {
  if (workers != 0) return workers;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores >= 1 ? static_cast<uint32_t>(cores) : 1;
}

const AppConfig* Config::find_app(const std::string& name) const {
  const auto it = apps.find(name);
  return it == apps.end() ? nullptr : &it->second;
}

}  // namespace rill::config
