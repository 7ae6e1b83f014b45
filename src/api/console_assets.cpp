#include "rill/api/console_assets.h"

#include "rill/api/api_server.h"

namespace rill::api {

namespace {
constexpr std::string_view kConsolePrefix = "/console/";
}  // namespace

const ConsoleAsset* find_console_asset(std::string_view name) {
  if (name.empty()) name = "index.html";
  for (const ConsoleAsset& a : console_assets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

void mount_console(ApiServer& api) {
  api.add(
      HttpMethod::Get, std::string(kConsolePrefix), PathMatch::Prefix,
      [&api](HttpExchange& ex) {
        const ConsoleAsset* a =
            find_console_asset(std::string_view(ex.info().path).substr(kConsolePrefix.size()));
        if (!a) return api.reply_error(ex, 404, "no such console file: " + ex.info().path);
        // The files change only with the binary; a reload of the page revalidates anyway.
        api.reply_text(ex, 200, std::string(a->content_type) + "; charset=utf-8", a->body, "no-cache");
      },
      ApiServer::Access::Public);
  api.add(
      HttpMethod::Get, "/", PathMatch::Exact,
      [&api](HttpExchange& ex) {
        ex.add_header("Location", kConsolePrefix);
        api.reply_text(ex, 302, "text/plain; charset=utf-8", "see /console/\n");
      },
      ApiServer::Access::Public);
}

}  // namespace rill::api
