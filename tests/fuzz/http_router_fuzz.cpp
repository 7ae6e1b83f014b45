// Fuzz target: the HTTP request-target router and percent_decode.
// Invariants: no crash; a Flv/HLS route names only [A-Za-z0-9_.~-] (never "..", never empty,
// never longer than max_name); a BadRequest says why and nothing else does; appending a query
// never changes the route of a path; percent_decode never turns %00 into a NUL, never grows its
// input, and inverts percent-encoding.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rill/media/stream_key.h"
#include "rill/server/http_router.h"

using rill::server::HttpRoute;
using rill::server::HttpRouterLimits;
using rill::server::percent_decode;
using rill::server::route_http;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

HttpRoute check_route(std::string_view uri, const HttpRouterLimits& lim) {
  HttpRoute r = route_http(uri, lim);
  switch (r.kind) {
    case HttpRoute::Kind::Flv:
    case HttpRoute::Kind::HlsPlaylist:
    case HttpRoute::Kind::HlsSegment:
      check(rill::media::is_valid_name(r.app));
      check(rill::media::is_valid_name(r.stream));
      check(r.error.empty());
      if (r.kind != HttpRoute::Kind::HlsSegment) check(r.segment == 0);
      {
        // A route never comes from an over-long path or query.
        std::string_view path = uri, query;
        if (auto q = uri.find('?'); q != std::string_view::npos) {
          path = uri.substr(0, q);
          query = uri.substr(q + 1);
        }
        path = path.substr(0, path.find('#'));
        check(path.size() <= lim.max_path && query.size() <= lim.max_query);
        check(!path.empty() && path[0] == '/');
      }
      break;
    case HttpRoute::Kind::Health:
      check(r.app.empty() && r.stream.empty() && r.error.empty());
      break;
    case HttpRoute::Kind::BadRequest:
      check(!r.error.empty());
      check(r.app.empty() && r.stream.empty());
      break;
    case HttpRoute::Kind::NotFound:
      check(r.app.empty() && r.stream.empty() && r.error.empty());
      break;
  }
  return r;
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);

  // The router, with the default limits and with tiny ones (so the length checks are reached).
  HttpRouterLimits def;
  HttpRouterLimits tiny;
  tiny.max_path = 24;
  tiny.max_query = 8;
  HttpRoute a = check_route(in, def);
  check_route(in, tiny);

  // A query string never changes the route of a path (within the query limit).
  if (in.find('?') == std::string_view::npos && in.find('#') == std::string_view::npos) {
    HttpRoute b = check_route(std::string(in) + "?x=../%00%zz", def);
    check(a.kind == b.kind && a.app == b.app && a.stream == b.stream && a.segment == b.segment);
  }
  // Rooted at '/', the same bytes give a route whose names are still clean.
  check_route("/" + std::string(in), def);
  check_route("/live/" + std::string(in) + ".flv", def);

  // percent_decode.
  std::string out;
  if (percent_decode(in, out)) {
    check(out.size() <= in.size());
    // %00 is refused; a raw NUL passes through (the router rejects it as a control byte).
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
  return 0;
}
