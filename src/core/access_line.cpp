#include "rill/core/access_line.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace rill::core {
namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A parameter name as the token check reads it (protocol/query_string.h decodes names as form
// data): "%73ign" and "sig%6e" are `sign` too, so they are redacted too.
std::string form_decoded(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (size_t i = 0; i < key.size(); ++i) {
    const int hi = key[i] == '%' && i + 2 < key.size() ? hex_value(key[i + 1]) : -1;
    const int lo = hi >= 0 ? hex_value(key[i + 2]) : -1;
    if (lo >= 0) {
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += key[i] == '+' ? ' ' : key[i];
    }
  }
  return out;
}

bool is_redacted(std::string_view key, std::span<const std::string> names) {
  const bool encoded = key.find_first_of("%+") != std::string_view::npos;
  const std::string decoded = encoded ? form_decoded(key) : std::string();
  const std::string_view name = encoded ? std::string_view(decoded) : key;
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return equals_ignoring_case(name, n); });
}

// A value between double quotes in the combined format, escaped as nginx escapes its HTTP log
// ('"', '\\' and bytes outside printable ASCII as \xHH), so a client cannot end the field early
// or forge a line. An empty value is "" as nginx-rtmp writes it, or "-" as nginx's HTTP log does.
void append_quoted(std::string& out, std::string_view text, std::string_view empty = {}) {
  out += '"';
  if (text.empty()) out += empty;
  for (unsigned char c : text) {
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

// The address without its port: nginx's $remote_addr.
std::string_view address_of(std::string_view peer) {
  if (peer.starts_with('[')) {
    const size_t end = peer.find(']');
    return end == std::string_view::npos ? peer : peer.substr(1, end - 1);
  }
  const size_t colon = peer.rfind(':');
  return colon == std::string_view::npos || peer.find(':') != colon ? peer : peer.substr(0, colon);
}

// Local time in strftime's `pattern`: nginx's $time_local "%d/%b/%Y:%H:%M:%S %z"
// (05/Dec/2026:02:03:29 +0000), ISO 8601 "%Y-%m-%dT%H:%M:%S%z" for JSON.
std::string local_time(std::time_t now, const char* pattern) {
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof buf, pattern, &tm));
}

void json_field(std::string& out, std::string_view key, std::string_view value) {
  out += out.size() > 1 ? ",\"" : "\"";
  out += key;
  out += "\":\"";
  append_json_escaped(out, value);
  out += '"';
}

void json_field(std::string& out, std::string_view key, int64_t value) {
  out += fmt::format(",\"{}\":{}", key, value);
}

// The fields every JSON line starts with, and those it ends with.
void json_open(std::string& out, std::time_t now, std::string_view peer, std::string_view protocol) {
  out += '{';
  json_field(out, "time", local_time(now, "%Y-%m-%dT%H:%M:%S%z"));
  json_field(out, "addr", address_of(peer));
  json_field(out, "peer", peer);
  json_field(out, "protocol", protocol);
}

void json_close(std::string& out, std::string_view agent, std::string_view referer) {
  json_field(out, "agent", agent);
  json_field(out, "referer", referer);
  out += '}';
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

}  // namespace

std::string redact_query(std::string_view query, std::span<const std::string> names) {
  std::string out;
  out.reserve(query.size());
  while (true) {
    const size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    const size_t eq = part.find('=');
    if (eq != std::string_view::npos && is_redacted(part.substr(0, eq), names)) {
      out.append(part.substr(0, eq + 1));
      out += "REDACTED";
    } else {
      out.append(part);
    }
    if (amp == std::string_view::npos) break;
    out += '&';
    query.remove_prefix(amp + 1);
  }
  return out;
}

std::string redact_target(std::string_view target, std::span<const std::string> names) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, q + 1));
  out += redact_query(target.substr(q + 1), names);
  return out;
}

std::string readable_duration(int64_t ms) {
  const int64_t v = std::max<int64_t>(ms, 0) / 1000;
  const int64_t days = v / 86400, hours = v / 3600 % 24, minutes = v / 60 % 60, seconds = v % 60;
  std::string out;
  if (days) out += fmt::format("{}d ", days);
  if (days || hours) out += fmt::format("{}h ", hours);
  if (days || hours || minutes) out += fmt::format("{}m ", minutes);
  out += fmt::format("{}s", seconds);
  return out;
}

void append_json_escaped(std::string& out, std::string_view text) {
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        // Control bytes escaped; bytes >= 0x80 too, so a line is valid JSON whatever a client sent.
        if (c < 0x20 || c >= 0x7f) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
}

std::string format_session_access(const SessionAccess& a, AccessFormat format, std::time_t now) {
  std::string out;
  out.reserve(256 + a.args.size() + a.agent.size() + a.referer.size());
  if (format == AccessFormat::Json) {
    json_open(out, now, a.peer, a.protocol);
    json_field(out, "command", a.command.empty() ? std::string_view("none") : a.command);
    json_field(out, "app", a.app);
    json_field(out, "name", a.name);
    json_field(out, "args", a.args);
    json_field(out, "bytes_in", static_cast<int64_t>(a.bytes_in));
    json_field(out, "bytes_out", static_cast<int64_t>(a.bytes_out));
    json_field(out, "duration_ms", a.duration_ms);
    json_field(out, "close_reason", a.close_reason);
    json_close(out, a.agent, a.referer);
    return out;
  }
  // nginx-rtmp's default (ngx_rtmp_log_module.c, ngx_rtmp_combined_fmt):
  //   $remote_addr [$time_local] $command "$app" "$name" "$args" -
  //   $bytes_received $bytes_sent "$pageurl" "$flashver" ($session_readable_time)
  // exactly, then Rill's two fields after it: the protocol and the close reason in quotes.
  out += address_of(a.peer);
  out += " [" + local_time(now, "%d/%b/%Y:%H:%M:%S %z") + "] ";
  out += a.command.empty() ? std::string("NONE") : upper(a.command);
  out += ' ';
  append_quoted(out, a.app);
  out += ' ';
  append_quoted(out, a.name);
  out += ' ';
  append_quoted(out, a.args);
  out += fmt::format(" - {} {} ", a.bytes_in, a.bytes_out);
  append_quoted(out, a.referer);
  out += ' ';
  append_quoted(out, a.agent);
  out += " (" + readable_duration(a.duration_ms) + ") ";
  out += a.protocol;
  out += ' ';
  append_quoted(out, a.close_reason);
  return out;
}

std::string format_request_access(const RequestAccess& a, AccessFormat format, std::time_t now) {
  std::string out;
  out.reserve(192 + a.target.size() + a.agent.size() + a.referer.size());
  if (format == AccessFormat::Json) {
    json_open(out, now, a.peer, a.protocol);
    json_field(out, "method", a.method);
    json_field(out, "target", a.target);
    json_field(out, "status", a.status);
    json_field(out, "bytes_out", static_cast<int64_t>(a.bytes_out));
    json_field(out, "duration_ms", a.duration_ms);
    json_close(out, a.agent, a.referer);
    return out;
  }
  // nginx's HTTP `combined`:
  //   $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent
  //   "$http_referer" "$http_user_agent"
  // then the duration and the protocol.
  out += address_of(a.peer);
  out += " - - [" + local_time(now, "%d/%b/%Y:%H:%M:%S %z") + "] ";
  std::string request(a.method);
  request += ' ';
  request += a.target;
  request += ' ';
  request += a.version;
  append_quoted(out, request);
  out += fmt::format(" {} {} ", a.status, a.bytes_out);
  append_quoted(out, a.referer, "-");
  out += ' ';
  append_quoted(out, a.agent, "-");
  out += fmt::format(" {}ms ", a.duration_ms);
  out += a.protocol;
  return out;
}

}  // namespace rill::core
