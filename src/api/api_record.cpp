#include "rill/api/api_record.h"

#include "rill/api/api_server.h"
#include "rill/workers/worker_details.h"

namespace rill::api {

namespace {

using nlohmann::json;

constexpr size_t kMaxRecordBody = 1024;

}  // namespace

void post_record(ApiServer& api, HttpExchange& ex, const media::StreamKey& key) {
  const std::string& body = ex.body();
  const json j = body.size() > kMaxRecordBody ? json() : json::parse(body, nullptr, false);
  const std::string action =
      j.is_object() && j.contains("action") && j["action"].is_string() ? j["action"].get<std::string>() : "";
  if (action != "start" && action != "stop") {
    return api.reply_error(ex, 400, "expected a JSON object {\"action\": \"start\" | \"stop\"}");
  }
  const bool start = action == "start";
  const config::AppConfig* app = api.context().config->find_app(key.app);
  if (!app) return api.reply_error(ex, 404, "no such stream: " + key.str() + " (unknown app)");
  workers::WorkerDetails& details = api.details();
  // Every worker is asked; the one that records the stream (its owner) acts and answers found.
  api.gather(
      ex,
      [&api, key, records = app->record.enabled()](HttpExchange& ex, json all) {
        for (const json& w : all["workers"]) {
          if (w.value("found", 0) == 0) continue;
          if (w.value("records", 0) == 0 || !records) {
            return api.reply_error(
                ex, 409, "app " + key.app + " does not record (apps." + key.app + ".record.mode is off)");
          }
          return api.reply_json(ex, 200, json{{"app", key.app}, {"name", key.name}, {"record", w["record"]}});
        }
        api.reply_error(ex, 404, "no such stream: " + key.str() + " (no publisher)");
      },
      protocol::LinkRecordRequest{key.app, key.name, start},
      [&details, key, start] { return details.control_record(key, start); });
}

}  // namespace rill::api
