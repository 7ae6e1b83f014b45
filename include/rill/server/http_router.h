#pragma once
// HttpRouter: maps a request path onto what Rill serves, in one place. Pure (no sockets): the
// HTTP server calls route() and dispatches on the kind; the fuzz target calls it on raw input.
//
//   GET /healthz                    -> Health
//   GET /APP/STREAM.flv             -> Flv
//   GET /APP/STREAM.m3u8            -> HlsPlaylist
//   GET /APP/STREAM/SEQ.ts          -> HlsSegment
//
// App and stream names follow the one name rule of media/stream_key.h after percent-decoding, so
// "..", encoded traversal ("%2e%2e", "%2f") and control bytes never reach a lookup.
#include <cstdint>
#include <string>
#include <string_view>

namespace rill::server {

struct HttpRoute {
  enum class Kind { NotFound, BadRequest, Health, Flv, HlsPlaylist, HlsSegment };
  Kind kind = Kind::NotFound;
  std::string app;
  std::string stream;
  uint64_t segment = 0;  // HlsSegment
  std::string error;     // BadRequest: why
};

struct HttpRouterLimits {
  size_t max_path = 1024;
  size_t max_query = 2048;
};

// `uri` is the request target as received ("/live/test.flv?token=1").
HttpRoute route_http(std::string_view uri, const HttpRouterLimits& limits = {});

// Percent-decodes; false on malformed escapes or a decoded NUL.
bool percent_decode(std::string_view in, std::string& out);

}  // namespace rill::server
