#include "rill/api/api_routes.h"

#include <chrono>

#include "rill/api/api_record.h"
#include "rill/api/api_relays.h"
#include "rill/api/api_server.h"
#include "rill/api/api_views.h"
#include "rill/api/console_assets.h"
#include "rill/api/metrics_text.h"
#include "rill/media/stream_key.h"
#include "rill/workers/worker_details.h"

namespace rill::api {

namespace {

using nlohmann::json;
using Query = std::map<std::string, std::string>;

constexpr std::string_view kStreamsPrefix = "/api/v1/streams/";
constexpr std::string_view kClientsPrefix = "/api/v1/clients/";

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string param(const Query& q, const char* key) {
  auto it = q.find(key);
  return it == q.end() ? std::string() : it->second;
}

// Query and paging, or a 400 answered here (nullopt).
std::optional<std::pair<Query, Paging>> list_params(ApiServer& api, HttpExchange& ex) {
  auto q = parse_api_query(ex.info().query);
  if (!q) {
    api.reply_error(ex, 400, "malformed query string");
    return std::nullopt;
  }
  std::string error;
  const Paging p = parse_paging(*q, error);
  if (!error.empty()) {
    api.reply_error(ex, 400, error);
    return std::nullopt;
  }
  return std::make_pair(std::move(*q), p);
}

void get_streams(ApiServer& api, HttpExchange& ex) {
  auto params = list_params(api, ex);
  if (!params) return;
  api.gather(ex, [&api, params = std::move(*params)](HttpExchange& ex, json all) {
    const json items = stream_items(all, now_unix_ms(), param(params.first, "app"));
    api.reply_json(ex, 200, page(items, params.second));
  });
}

void get_clients(ApiServer& api, HttpExchange& ex) {
  auto params = list_params(api, ex);
  if (!params) return;
  const std::string kind = param(params->first, "kind");
  if (!kind.empty() && kind != "publisher" && kind != "player") {
    return api.reply_error(ex, 400, "kind must be publisher or player");
  }
  api.gather(ex, [&api, params = std::move(*params)](HttpExchange& ex, json all) {
    const Query& q = params.first;
    const json items = client_items(all, param(q, "app"), param(q, "name"), param(q, "kind"));
    api.reply_json(ex, 200, page(items, params.second));
  });
}

// /api/v1/streams/{app}/{name}: GET one, DELETE its publisher; POST .../record (api_record.h).
void stream_resource(ApiServer& api, HttpExchange& ex) {
  std::string rest = ex.info().path.substr(kStreamsPrefix.size());
  constexpr std::string_view kRecord = "/record";
  const bool record = ex.info().method == HttpMethod::Post;
  if (record) {
    if (!rest.ends_with(kRecord))
      return api.reply_error(ex, 404, "expected POST /api/v1/streams/{app}/{name}/record");
    rest.resize(rest.size() - kRecord.size());
  }
  const size_t slash = rest.find('/');
  std::string why = "expected /api/v1/streams/{app}/{name}";
  const auto key = slash == std::string::npos
                       ? std::nullopt
                       : media::StreamKey::make(rest.substr(0, slash), rest.substr(slash + 1), &why);
  if (!key) return api.reply_error(ex, 404, "no such stream: " + why);
  if (record) return post_record(api, ex, *key);
  const std::string text = key->str();
  if (ex.info().method == HttpMethod::Delete) {
    workers::WorkerDetails& details = api.details();
    const auto drop = protocol::LinkDropRequest{key->app, key->name};
    return api.gather(
        ex,
        [&api, text](HttpExchange& ex, json all) {
          uint64_t closed = 0;
          for (const json& w : all["workers"]) closed += w.value("closed", uint64_t{0});
          if (closed == 0) return api.reply_error(ex, 404, "stream " + text + " has no publisher");
          api.reply_no_content(ex);
        },
        drop, [&details, text] { return details.drop_publisher(text); });
  }
  api.gather(ex, [&api, key = *key](HttpExchange& ex, json all) {
    for (const json& s : stream_items(all, now_unix_ms(), key.app)) {
      if (s.value("name", "") == key.name) return api.reply_json(ex, 200, s);
    }
    api.reply_error(ex, 404, "no such stream: " + key.str());
  });
}

void delete_client(ApiServer& api, HttpExchange& ex) {
  const auto id = protocol::parse_decimal_u64(std::string_view(ex.info().path).substr(kClientsPrefix.size()));
  if (!id) return api.reply_error(ex, 404, "no such client: ids are decimal numbers");
  workers::WorkerDetails& details = api.details();
  // Session ids carry the worker's pid in their high half, but the pid of a slot is only known
  // from its answer: the request goes to every worker, and the one that has it closes it.
  api.gather(
      ex,
      [&api, id = *id](HttpExchange& ex, json all) {
        uint64_t closed = 0;
        for (const json& w : all["workers"]) closed += w.value("closed", uint64_t{0});
        if (closed == 0) return api.reply_error(ex, 404, "no such client: " + std::to_string(id));
        api.reply_no_content(ex);
      },
      protocol::LinkKickRequest{*id}, [&details, id = *id] { return details.kick_client(id); });
}

}  // namespace

void mount_api_routes(ApiServer& api) {
  mount_console(api);
  mount_relay_routes(api);
  api.add(HttpMethod::Get, "/api/v1/server", PathMatch::Exact,
          [&api](HttpExchange& ex) {
            api.gather(ex, [&api](HttpExchange& ex, json all) {
              json view = server_view(all, now_unix_ms());
              view["http_listen"] = json::array();  // where players connect (the console's player uses it)
              for (const auto& a : api.context().config->http.listen)
                view["http_listen"].push_back(a.to_string());
              api.reply_json(ex, 200, view);
            });
          });
  api.add(HttpMethod::Get, "/api/v1/streams", PathMatch::Exact,
          [&api](HttpExchange& ex) { get_streams(api, ex); });
  api.add(HttpMethod::Get | HttpMethod::Delete | HttpMethod::Post, std::string(kStreamsPrefix),
          PathMatch::Prefix, [&api](HttpExchange& ex) { stream_resource(api, ex); });
  api.add(HttpMethod::Get, "/api/v1/clients", PathMatch::Exact,
          [&api](HttpExchange& ex) { get_clients(api, ex); });
  api.add(HttpMethod::Delete, std::string(kClientsPrefix), PathMatch::Prefix,
          [&api](HttpExchange& ex) { delete_client(api, ex); });
  api.add(
      HttpMethod::Get, "/metrics", PathMatch::Exact,
      [&api](HttpExchange& ex) {
        api.gather(ex, [&api](HttpExchange& ex, json all) {
          api.reply_text(ex, 200, kMetricsContentType, metrics_text(all, now_unix_ms()));
        });
      },
      ApiServer::Access::Metrics);
}

}  // namespace rill::api
