#pragma once
// The web console's files (console/ and the vendored hls.js and mpegts.js of third_party/),
// compiled into the binary by cmake/console_assets.cmake, and the route that serves them:
//
//   GET /console/            index.html
//   GET /console/<file>      one of console_assets(), with its content type; else 404
//   GET /                    302 to /console/
//
// The files are public (a browser cannot send the token when it opens a page); every API call the
// page makes carries the token, which the page asks for once (docs/api.md).
#include <span>
#include <string_view>

namespace rill::api {

class ApiServer;

struct ConsoleAsset {
  std::string_view name;          // "index.html"
  std::string_view content_type;  // "text/html" (all are UTF-8 text)
  std::string_view body;
};

std::span<const ConsoleAsset> console_assets();  // generated
const ConsoleAsset* find_console_asset(std::string_view name);
void mount_console(ApiServer& api);

}  // namespace rill::api
