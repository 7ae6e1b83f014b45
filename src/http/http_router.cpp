#include "rill/http/http_router.h"

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>

namespace rill::http {

namespace {

constexpr HttpMethod kAllMethods[] = {HttpMethod::Get,     HttpMethod::Head,   HttpMethod::Post,
                                      HttpMethod::Put,     HttpMethod::Delete, HttpMethod::Patch,
                                      HttpMethod::Options, HttpMethod::Trace,  HttpMethod::Connect};

bool is_dot_segment(std::string_view seg) { return seg == "." || seg == ".."; }

enum class PathFault { None, Control, DotSegment, EmptySegment };

// What is wrong with a decoded path, in one pass, the first of: a control byte or a backslash
// anywhere, a "." or ".." segment (RFC 3986 §3.3: dot-segments), an empty segment ("//").
PathFault path_fault(std::string_view path) {
  bool dot = false, empty = false;
  size_t seg = 0;  // where the current segment starts
  for (size_t i = 0; i < path.size(); ++i) {
    const auto c = static_cast<unsigned char>(path[i]);
    if (c < 0x20 || c == 0x7f || c == '\\') return PathFault::Control;
    if (c == '/') {
      dot = dot || is_dot_segment(path.substr(seg, i - seg));
      empty = empty || (i > 0 && path[i - 1] == '/');
      seg = i + 1;
    }
  }
  dot = dot || is_dot_segment(path.substr(seg));
  return dot ? PathFault::DotSegment : empty ? PathFault::EmptySegment : PathFault::None;
}

// A target's bytes by what the one pass over its path does with them.
enum PathByte : uint8_t { kPlain, kEnd, kPercent, kSlash, kControl };
constexpr std::array<uint8_t, 256> kPathBytes = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = kControl;
  t[0x7f] = t['\\'] = kControl;
  t['?'] = t['#'] = kEnd;
  t['%'] = kPercent;
  t['/'] = kSlash;
  return t;
}();

struct PathScan {
  size_t end = 0;                     // where the path ends: at '?', '#' or the target's end
  bool escaped = false;               // holds a '%': decoded before it is checked
  PathFault fault = PathFault::None;  // path_fault() of the raw path (its own decoding when not escaped)
};

// One pass over a target: where its path ends, whether it holds an escape, and what path_fault()
// would say of it (same order: a control byte, then a dot segment, then an empty one). A plain
// byte costs one table load.
PathScan scan_path(std::string_view uri) {
  PathScan r;
  bool control = false, dot = false, empty = false;
  size_t seg = 0, i = 0;
  for (; i < uri.size(); ++i) {
    const uint8_t k = kPathBytes[static_cast<unsigned char>(uri[i])];
    if (k == kPlain) continue;
    if (k == kEnd) break;
    if (k == kPercent) {
      r.escaped = true;
    } else if (k == kControl) {
      control = true;
    } else {  // '/'
      dot = dot || is_dot_segment(uri.substr(seg, i - seg));
      empty = empty || (i > 0 && uri[i - 1] == '/');
      seg = i + 1;
    }
  }
  dot = dot || is_dot_segment(uri.substr(seg, i - seg));
  r.end = i;
  r.fault = control ? PathFault::Control
            : dot   ? PathFault::DotSegment
            : empty ? PathFault::EmptySegment
                    : PathFault::None;
  return r;
}

RequestTarget target_error(TargetError e, std::string why) {
  RequestTarget t;
  t.error = e;
  t.why = std::move(why);
  return t;
}

}  // namespace

const char* method_name(HttpMethod m) {
  switch (m) {
    case HttpMethod::Get:
      return "GET";
    case HttpMethod::Head:
      return "HEAD";
    case HttpMethod::Post:
      return "POST";
    case HttpMethod::Put:
      return "PUT";
    case HttpMethod::Delete:
      return "DELETE";
    case HttpMethod::Patch:
      return "PATCH";
    case HttpMethod::Options:
      return "OPTIONS";
    case HttpMethod::Trace:
      return "TRACE";
    case HttpMethod::Connect:
      return "CONNECT";
  }
  return "?";
}

std::optional<HttpMethod> method_from_token(std::string_view token) {
  // RFC 9110 §9.1: method names are case-sensitive.
  for (HttpMethod m : kAllMethods) {
    if (token == method_name(m)) return m;
  }
  return std::nullopt;
}

std::string HttpMethods::list() const {
  std::string out;
  for (HttpMethod m : kAllMethods) {
    if (!has(m)) continue;
    if (!out.empty()) out += ", ";
    out += method_name(m);
  }
  return out;
}

int target_error_status(TargetError e) {
  switch (e) {
    case TargetError::None:
      return 200;
    case TargetError::TooLong:
      return 414;  // RFC 9110 §15.5.15 URI Too Long
    case TargetError::Malformed:
    case TargetError::Traversal:
      return 400;
  }
  return 400;
}

RequestTarget parse_request_target(std::string_view uri, const HttpRouterLimits& limits) {
  // origin-form = absolute-path [ "?" query ] (RFC 9112 §3.2.1); a fragment is not part of a
  // target (RFC 9110 §7.1) and is dropped if a client sends one anyway. One pass finds where the
  // path ends and whether it holds an escape: a path without one (most) is its own decoding.
  const PathScan scan = scan_path(uri);
  const size_t path_end = scan.end;
  const std::string_view path = uri.substr(0, path_end);
  std::string_view query;
  if (path_end < uri.size() && uri[path_end] == '?') {
    query = uri.substr(path_end + 1);
    query = query.substr(0, query.find('#'));
  }
  if (path.size() > limits.max_path)
    return target_error(TargetError::TooLong,
                        "path longer than " + std::to_string(limits.max_path) + " bytes");
  if (query.size() > limits.max_query)
    return target_error(TargetError::TooLong,
                        "query longer than " + std::to_string(limits.max_query) + " bytes");
  if (path.empty() || path[0] != '/') return target_error(TargetError::Malformed, "path must start with '/'");
  RequestTarget t;
  if (!scan.escaped) {
    t.path.assign(path);
  } else if (!percent_decode(path, t.path)) {
    return target_error(TargetError::Malformed, "malformed percent-encoding in path");
  }
  switch (scan.escaped ? path_fault(t.path) : scan.fault) {
    case PathFault::Control:
      return target_error(TargetError::Malformed, "control character or backslash in path");
    case PathFault::DotSegment:
      return target_error(TargetError::Traversal, "path traversal");
    case PathFault::EmptySegment:
      return target_error(TargetError::Malformed, "empty path segment");
    case PathFault::None:
      break;
  }
  t.query.assign(query);
  return t;
}

void HttpRouteTable::add(HttpMethods methods, std::string path, PathMatch match, Handler handler) {
  if (path.empty() || path[0] != '/') throw std::invalid_argument("route path must start with '/': " + path);
  if (match == PathMatch::Prefix && path.back() != '/')
    throw std::invalid_argument("route prefix must end with '/': " + path);
  entries_.push_back(Entry{methods, std::move(path), match, std::move(handler)});
}

HttpRouteTable::Result HttpRouteTable::match(HttpMethod method, std::string_view path) const {
  // The most specific mount that covers the path: an exact path, else the longest prefix.
  auto rank = [](const Entry& e) {
    return e.match == PathMatch::Exact ? std::numeric_limits<size_t>::max() : e.path.size();
  };
  const Entry* best = nullptr;
  for (const Entry& e : entries_) {
    const bool covers = e.match == PathMatch::Exact ? path == e.path : path.starts_with(e.path);
    if (covers && (!best || rank(e) > rank(*best))) best = &e;
  }
  Result r;
  if (!best) return r;
  // Every entry of that mount: its methods make the Allow list. HEAD goes to an entry that lists
  // it, else to the GET entry ("The HEAD method is identical to GET except that the server MUST
  // NOT send content in the response", RFC 9110 §9.3.2).
  HttpMethods methods;
  const Handler* via_get = nullptr;
  for (const Entry& e : entries_) {
    if (e.match != best->match || e.path != best->path) continue;
    methods = methods | e.methods;
    if (!r.handler && e.methods.has(method)) r.handler = &e.handler;
    if (!via_get && method == HttpMethod::Head && e.methods.has(HttpMethod::Get)) via_get = &e.handler;
  }
  if (!r.handler) r.handler = via_get;
  r.allow = methods | HttpMethod::Options;
  if (methods.has(HttpMethod::Get)) r.allow = r.allow | HttpMethod::Head;
  if (r.handler) {
    r.status = Result::Status::Found;
  } else {
    r.status = method == HttpMethod::Options ? Result::Status::Options : Result::Status::MethodNotAllowed;
  }
  return r;
}

}  // namespace rill::http
