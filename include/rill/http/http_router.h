#pragma once
// HTTP routing, pure (no sockets): the request target and the route table.
//
//   parse_request_target("/live/cam.flv?token=x")  -> path "/live/cam.flv" (percent-decoded),
//                                                     query "token=x" (raw: tokens travel there)
//   HttpRouteTable: method set + path (exact or prefix) -> handler; 405 with the Allow list
//                   computed from the table, 404; OPTIONS and HEAD answered generically.
//
// A decoded path never holds "..", encoded traversal ("%2e%2e", "%2f") or control bytes, so a
// name taken from it (the stream paths, server/stream_routes.h) never reaches a lookup with them.
// HttpServer (http_server.h) runs these on every request; the fuzz target runs them on raw input.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rill/protocol/percent_coding.h"

namespace rill::http {

class HttpExchange;  // http_exchange.h

// ---- methods -------------------------------------------------------------------------------

enum class HttpMethod : uint16_t {
  Get = 1 << 0,
  Head = 1 << 1,
  Post = 1 << 2,
  Put = 1 << 3,
  Delete = 1 << 4,
  Patch = 1 << 5,
  Options = 1 << 6,
  Trace = 1 << 7,
  Connect = 1 << 8,
};
const char* method_name(HttpMethod m);
// The method a request line names ("GET"), or nullopt for one this server does not know (501).
std::optional<HttpMethod> method_from_token(std::string_view token);

// A set of methods.
class HttpMethods {
 public:
  constexpr HttpMethods() = default;
  constexpr HttpMethods(HttpMethod m) : bits_(static_cast<uint16_t>(m)) {}  // NOLINT: implicit on purpose
  constexpr HttpMethods operator|(HttpMethods o) const { return from_bits(bits_ | o.bits_); }
  constexpr bool has(HttpMethod m) const { return (bits_ & static_cast<uint16_t>(m)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr bool operator==(const HttpMethods&) const = default;
  // "GET, HEAD, OPTIONS": the form of the Allow and Access-Control-Allow-Methods headers.
  std::string list() const;

 private:
  static constexpr HttpMethods from_bits(unsigned b) {
    HttpMethods s;
    s.bits_ = static_cast<uint16_t>(b);
    return s;
  }
  uint16_t bits_ = 0;
};
constexpr HttpMethods operator|(HttpMethod a, HttpMethod b) { return HttpMethods(a) | b; }

// ---- the request target --------------------------------------------------------------------

struct HttpRouterLimits {
  size_t max_path = 1024;   // bytes, before percent-decoding
  size_t max_query = 2048;  // bytes
};

// Why a request target is refused; the status comes from this type (target_error_status), never
// from the text.
enum class TargetError : uint8_t {
  None,
  TooLong,    // path or query over its limit: 414
  Malformed,  // not an origin-form path, bad or NUL escape, control byte, backslash, "//": 400
  Traversal,  // a "." or ".." path segment (plain or encoded): 400
};
int target_error_status(TargetError e);  // 414 for TooLong, 400 otherwise (200 for None)

struct RequestTarget {
  TargetError error = TargetError::None;
  std::string why;    // with an error: what is wrong (the log line and the response body)
  std::string path;   // percent-decoded, starts with '/'
  std::string query;  // as received, without the '?' and any fragment; not decoded
  bool ok() const { return error == TargetError::None; }
};

// `uri` is the request target as received ("/live/test.flv?token=1").
RequestTarget parse_request_target(std::string_view uri, const HttpRouterLimits& limits = {});

// Percent-decodes (Strict by default: false on malformed escapes or a decoded NUL).
using protocol::percent_decode;

// ---- the route table -----------------------------------------------------------------------

// What a handler learns of its request besides the exchange (http_exchange.h) itself.
struct HttpRequestInfo {
  HttpMethod method = HttpMethod::Get;
  std::string target;  // as received (for the access log)
  std::string path;    // percent-decoded
  std::string query;   // raw, without '?': admission tokens travel here
  std::string peer;    // "addr:port", "[v6addr]:port"
  uint64_t id = 0;     // the request's session id (an HTTP-FLV player keeps it)
  int64_t started_ms = 0;
};

enum class PathMatch : uint8_t {
  Exact,   // the path equals the entry's
  Prefix,  // the path starts with the entry's, which ends with '/' ("/console/")
};

class HttpRouteTable {
 public:
  using Handler = std::function<void(HttpExchange&)>;  // the request: HttpExchange::info()

  // A GET entry also answers HEAD (HttpExchange::reply leaves the body out); OPTIONS is answered
  // for every routed path from the table unless an entry lists it. The most specific entries win:
  // an exact path, else the longest prefix; entries with the same path share it (e.g. GET and
  // POST of one resource with two handlers). Throws std::invalid_argument on a path that does
  // not start with '/', or a prefix that does not end with '/'.
  void add(HttpMethods methods, std::string path, PathMatch match, Handler handler);

  struct Result {
    enum class Status : uint8_t {
      Found,             // call *handler
      Options,           // no entry handles OPTIONS: answer it from `allow`
      MethodNotAllowed,  // 405 with Allow: `allow`
      NotFound,          // 404
    };
    Status status = Status::NotFound;
    const Handler* handler = nullptr;  // Found
    HttpMethods allow;                 // all but NotFound: the path's methods, with HEAD when
                                       // GET is there and OPTIONS always
  };
  Result match(HttpMethod method, std::string_view path) const;

 private:
  struct Entry {
    HttpMethods methods;
    std::string path;
    PathMatch match;
    Handler handler;
  };
  std::vector<Entry> entries_;
};

}  // namespace rill::http
