#pragma once
// One access log line (docs/operations.md, "The access log"): what a finished RTMP session,
// HTTP-FLV player or HTTP request was, rendered in nginx-rtmp's `combined` format (so existing
// nginx-rtmp log parsers read it) or as one JSON object. Written once per session end or
// request, never per frame. Query strings pass through redact_query() first: a signed token
// (`sign=`) or any other configured secret parameter never reaches the file.
#include <cstdint>
#include <ctime>
#include <span>
#include <string>
#include <string_view>

namespace rill::core {

enum class AccessFormat : uint8_t { Combined, Json };

// A publish or play session (RTMP, RTMPS, HTTP-FLV), logged when it ends.
struct SessionAccess {
  std::string_view peer;      // "addr:port" or "[v6]:port"
  std::string_view protocol;  // rtmp | rtmps | http-flv
  std::string_view command;   // publish | play | "" (neither: connected only)
  std::string_view app;
  std::string_view name;
  std::string_view args;  // the query, already redacted
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  int64_t duration_ms = 0;
  std::string_view close_reason;  // client closed, kicked, refused: WHY, idle timeout, ...
  std::string_view agent;         // flashVer / User-Agent
  std::string_view referer;       // pageUrl / Referer
};

// One HTTP request (HLS playlists and segments, the API, HTTP-FLV's HEAD), logged when answered.
struct RequestAccess {
  std::string_view peer;
  std::string_view protocol;  // hls | http
  std::string_view method;
  std::string_view target;   // already redacted
  std::string_view version;  // "HTTP/1.1"
  int status = 0;
  uint64_t bytes_out = 0;
  int64_t duration_ms = 0;
  std::string_view agent;
  std::string_view referer;
};

// `query` (without '?') with the value of every parameter named in `names` (exact, ASCII
// case-insensitive) replaced by REDACTED: "expires=9&sign=ab" -> "expires=9&sign=REDACTED".
std::string redact_query(std::string_view query, std::span<const std::string> names);
// The same for a request target "/path?query"; the path is kept.
std::string redact_target(std::string_view target, std::span<const std::string> names);

// The lines, without the newline; `now` is the wall-clock time written (the session's end).
std::string format_session_access(const SessionAccess& a, AccessFormat format, std::time_t now);
std::string format_request_access(const RequestAccess& a, AccessFormat format, std::time_t now);

// nginx-rtmp's $session_readable_time: "1d 2h 3m 4s", leading zero units left out ("5s").
std::string readable_duration(int64_t ms);
// `text` as the inside of a JSON string (quotes, backslashes, control bytes escaped).
void append_json_escaped(std::string& out, std::string_view text);

}  // namespace rill::core
