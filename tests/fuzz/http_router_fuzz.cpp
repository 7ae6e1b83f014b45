// Fuzz target: the pure HTTP routing functions (parse_request_target, parse_stream_path, the route
// table, percent_decode).
// Invariants: no crash; a stream route names only valid names (media::is_valid_name: never "..",
// never empty, never longer than the limit, never a '/'); a target error says why and carries
// 400 or 414, and leaves no path or query behind; an accepted target's path is rooted, decoded and
// free of control bytes, "//" and dot-segments, and its query is the raw bytes after the first
// '?'; appending a query never changes the path; the route table answers every method on every
// path with one of its four outcomes, consistently with its entries; percent_decode never turns
// %00 into a NUL, never grows its input, and inverts percent-encoding.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rill/http/http_router.h"
#include "rill/media/stream_key.h"
#include "rill/server/stream_routes.h"

using rill::http::HttpExchange;
using rill::http::HttpMethod;
using rill::http::HttpRouterLimits;
using rill::http::HttpRouteTable;
using rill::http::parse_request_target;
using rill::server::parse_stream_path;
using rill::http::PathMatch;
using rill::http::percent_decode;
using rill::http::RequestTarget;
using rill::server::StreamPath;
using rill::server::StreamRoute;
using rill::http::target_error_status;
using rill::http::TargetError;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void check_stream_path(std::string_view path) {
  StreamPath sp = parse_stream_path(path);
  if (sp.kind == StreamRoute::None) {
    check(sp.key.app.empty() && sp.key.name.empty() && sp.segment == 0);
    check(sp.invalid_name == !sp.why.empty());
    return;
  }
  check(!sp.invalid_name && sp.why.empty());
  check(rill::media::is_valid_name(sp.key.app));
  check(rill::media::is_valid_name(sp.key.name));
  if (sp.kind != StreamRoute::HlsSegment) check(sp.segment == 0);
  // The names are where the path says they are.
  check(path.starts_with("/" + sp.key.app + "/" + sp.key.name));
}

RequestTarget check_target(std::string_view uri, const HttpRouterLimits& lim) {
  RequestTarget t = parse_request_target(uri, lim);
  if (!t.ok()) {
    check(!t.why.empty() && t.path.empty() && t.query.empty());
    const int status = target_error_status(t.error);
    check(status == (t.error == TargetError::TooLong ? 414 : 400));
    return t;
  }
  check(t.why.empty());
  check(!t.path.empty() && t.path[0] == '/');
  check(t.path.find("//") == std::string::npos);
  for (unsigned char c : t.path) check(c >= 0x20 && c != 0x7f && c != '\\');
  check(t.path != "/." && t.path != "/.." && t.path.find("/./") == std::string::npos &&
        t.path.find("/../") == std::string::npos && !t.path.ends_with("/.") && !t.path.ends_with("/.."));
  // The query is the raw text after the first '?' (up to a fragment), within its limit.
  std::string_view before_fragment = uri.substr(0, uri.find('#'));
  const auto q = before_fragment.find('?');
  check(t.query == (q == std::string_view::npos ? std::string_view() : before_fragment.substr(q + 1)));
  check(t.query.size() <= lim.max_query);
  check(t.path.size() <= lim.max_path);  // decoding never grows the path
  check_stream_path(t.path);
  return t;
}

// A table like the server's plus an API and a console.
const HttpRouteTable& table() {
  static const HttpRouteTable t = [] {
    HttpRouteTable r;
    auto h = [](HttpExchange&) {};
    r.add(HttpMethod::Get, "/healthz", PathMatch::Exact, h);
    r.add(HttpMethod::Get, "/", PathMatch::Prefix, h);
    r.add(HttpMethod::Get | HttpMethod::Post, "/api/v1/streams", PathMatch::Exact, h);
    r.add(HttpMethod::Get | HttpMethod::Delete, "/api/v1/streams/", PathMatch::Prefix, h);
    r.add(HttpMethod::Get, "/console/", PathMatch::Prefix, h);
    return r;
  }();
  return t;
}

void check_table(std::string_view path) {
  using Status = HttpRouteTable::Result::Status;
  for (HttpMethod m : {HttpMethod::Get, HttpMethod::Head, HttpMethod::Post, HttpMethod::Delete,
                       HttpMethod::Options, HttpMethod::Patch}) {
    auto r = table().match(m, path);
    const bool rooted = !path.empty() && path[0] == '/';
    check(rooted == (r.status != Status::NotFound));  // "/" covers every rooted path
    check((r.status == Status::Found) == (r.handler != nullptr));
    if (r.status == Status::NotFound) continue;
    check(r.allow.has(HttpMethod::Options) && r.allow.has(HttpMethod::Get) && r.allow.has(HttpMethod::Head));
    if (r.status == Status::Found) check(r.allow.has(m));
    if (r.status == Status::MethodNotAllowed) check(!r.allow.has(m) && m != HttpMethod::Options);
    if (r.status == Status::Options) check(m == HttpMethod::Options);
  }
}

const char kHex[] = "0123456789ABCDEF";

std::string percent_encode_all(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    out.push_back('%');
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

void check_percent_decode(std::string_view in) {
  std::string out;
  if (percent_decode(in, out)) {
    check(out.size() <= in.size());
    // %00 is refused; a raw NUL passes through (the target check rejects it as a control byte).
    if (in.find('\0') == std::string_view::npos) check(out.find('\0') == std::string::npos);
    if (in.find('%') == std::string_view::npos) check(out == in);
    // Encoding every byte and decoding gives the bytes back (%00 excepted: it is refused).
    std::string again;
    bool has_nul = out.find('\0') != std::string::npos;
    check(percent_decode(percent_encode_all(out), again) == !has_nul);
    if (!has_nul) check(again == out);
  } else {
    // Failure only for a '%' escape problem or an encoded NUL.
    check(in.find('%') != std::string_view::npos);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);

  // The target, with the default limits and with tiny ones (so the length checks are reached).
  HttpRouterLimits def;
  HttpRouterLimits tiny;
  tiny.max_path = 24;
  tiny.max_query = 8;
  RequestTarget a = check_target(in, def);
  check_target(in, tiny);

  // A query never changes the path (within the query limit).
  if (in.find('?') == std::string_view::npos && in.find('#') == std::string_view::npos) {
    RequestTarget b = check_target(std::string(in) + "?x=../%00%zz", def);
    check(a.error == b.error && a.path == b.path);
    if (b.ok()) check(b.query == "x=../%00%zz");
  }
  // Rooted at '/', the same bytes give a route whose names are still clean.
  const std::string rooted = std::string("/").append(in);
  check_target(rooted, def);
  check_target(std::string("/live/").append(in) + ".flv", def);

  // The raw bytes straight into the stream-path parser and the table (no target checks first).
  check_stream_path(in);
  check_stream_path(rooted);
  check_table(in);
  if (a.ok()) check_table(a.path);

  check_percent_decode(in);
  return 0;
}
