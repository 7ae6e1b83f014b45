// GET/POST/DELETE /api/v1/relays (docs/api.md): the cluster's relays of the whole server, and
// push/pull relays created and removed at run time. A run-time relay is created on every worker
// under one id: a push then forwards the stream whichever worker its publisher lands on, and a
// pull is run by the one worker the ownership table elects (the others stand by).
#include "rill/api/api_relays.h"

#include <map>
#include <string>

#include "rill/api/api_server.h"
#include "rill/core/name_rule.h"
#include "rill/workers/worker_details.h"

namespace rill::api {

namespace {

using nlohmann::json;

constexpr std::string_view kRelaysPath = "/api/v1/relays";
constexpr size_t kMaxRelayBody = 16 * 1024;

void get_relays(ApiServer& api, HttpExchange& ex) {
  api.gather(ex, [&api](HttpExchange& ex, json all) {
    const json items = relay_items(all);
    api.reply_json(ex, 200, json{{"total", items.size()}, {"items", items}});
  });
}

// The POST body, or an error answered here (nullopt).
std::optional<protocol::LinkRelayAddRequest> relay_request(ApiServer& api, HttpExchange& ex) {
  const std::string& body = ex.body();
  if (body.size() > kMaxRelayBody) return api.reply_error(ex, 413, "body over 16 KiB"), std::nullopt;
  const json j = json::parse(body, nullptr, false);
  std::string why;
  if (!j.is_object()) why = "expected a JSON object {\"kind\", \"app\", \"name\", \"url\"}";
  auto text = [&](const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "";
  };
  protocol::LinkRelayAddRequest r{"", text("kind"), text("app"), text("name"), text("url")};
  if (why.empty() && r.kind != "push" && r.kind != "pull") why = "kind must be \"push\" or \"pull\"";
  if (why.empty() && !api.context().config->find_app(r.app)) why = "unknown app '" + r.app + "'";
  if (why.empty()) {
    if (auto e = core::name_error(r.name)) why = "invalid name '" + r.name + "': " + *e;
  }
  if (why.empty() && ((r.url.rfind("rtmp://", 0) != 0 && r.url.rfind("rtmps://", 0) != 0) ||
                      r.url.find_first_of(" \t\r\n") != std::string::npos || r.url.size() > 400)) {
    why = "url must be rtmp[s]://HOST[:PORT]/APP[/NAME] (at most 400 bytes)";
  }
  r.id = "r" + std::to_string(api.context().sessions->next_id());
  // Every worker must be able to read it: one worker-link request line.
  if (why.empty() && protocol::format_link_request(r).size() > protocol::kLinkMaxRequestLine) {
    why = "app, name and url too long together (one worker-link line: " +
          std::to_string(protocol::kLinkMaxRequestLine) + " bytes)";
  }
  if (!why.empty()) return api.reply_error(ex, 400, why), std::nullopt;
  return r;
}

void post_relay(ApiServer& api, HttpExchange& ex) {
  auto r = relay_request(api, ex);
  if (!r) return;
  workers::WorkerDetails& details = api.details();
  api.gather(
      ex,
      [&api, id = r->id](HttpExchange& ex, json all) {
        uint64_t created = 0;
        std::string error;
        for (const json& w : all["workers"]) {
          created += w.value("created", uint64_t{0});
          if (error.empty()) error = w.value("error", "");
        }
        if (created == 0) return api.reply_error(ex, 400, error.empty() ? "not created" : error);
        api.reply_json(ex, 201, json{{"id", id}, {"workers", created}});
      },
      *r, [&details, r = *r] { return details.add_relay(r); });
}

void delete_relay(ApiServer& api, HttpExchange& ex) {
  const std::string id = ex.info().path.substr(kRelaysPath.size() + 1);
  try {
    (void)protocol::parse_link_request("RELAY DEL " + id);  // the id rule, in one place
  } catch (const std::exception&) {
    return api.reply_error(ex, 404, "no such relay: " + id.substr(0, 64));
  }
  workers::WorkerDetails& details = api.details();
  api.gather(
      ex,
      [&api, id](HttpExchange& ex, json all) {
        uint64_t closed = 0;
        for (const json& w : all["workers"]) closed += w.value("closed", uint64_t{0});
        if (closed == 0) return api.reply_error(ex, 404, "no such run-time relay: " + id);
        api.reply_no_content(ex);
      },
      protocol::LinkRelayDelRequest{id}, [&details, id] { return details.remove_relay(id); });
}

}  // namespace

json relay_items(const json& all) {
  // One row per relay id: a run-time pull exists on every worker, one of them running it and the
  // others standing by; the running row wins.
  std::map<std::string, json> by_id;
  for (const json& w : all.value("workers", json::array())) {
    for (const json& r : w.value("relays", json::array())) {
      const std::string id = r.value("id", "");
      auto it = by_id.find(id);
      if (it == by_id.end() || it->second.value("state", "") == "standby") by_id[id] = r;
    }
  }
  json items = json::array();
  for (auto& [id, r] : by_id) items.push_back(std::move(r));
  return items;
}

void mount_relay_routes(ApiServer& api) {
  api.add(HttpMethod::Get | HttpMethod::Post, std::string(kRelaysPath), PathMatch::Exact,
          [&api](HttpExchange& ex) {
            if (ex.info().method == HttpMethod::Post) return post_relay(api, ex);
            get_relays(api, ex);
          });
  api.add(HttpMethod::Delete, std::string(kRelaysPath) + "/", PathMatch::Prefix,
          [&api](HttpExchange& ex) { delete_relay(api, ex); });
}

}  // namespace rill::api
