#include "rill/api/api_server.h"

#include <openssl/crypto.h>

#include "rill/workers/stream_locator.h"
#include "rill/workers/worker_monitor.h"
#include "rill/workers/worker_stats.h"

namespace rill::api {

using nlohmann::json;

// A gathering, owned by the exchange it answers (HttpHeldState).
struct ApiServer::Pending final : HttpHeldState {
  HttpHeld held;  // the exchange, while its client is there
  Gathered done;
  std::unique_ptr<workers::StatsGatherer> gatherer;
  // The client left first: the answer has no one to go to. The gatherer cannot be destroyed from
  // inside its own callback; here it is not running.
  void abandoned(const HttpExchange&) override { gatherer.reset(); }
};

ApiServer::ApiServer(net::WorkerCore& ctx, workers::WorkerDetails& details, workers::WorkerMonitor* monitor,
                     const workers::StreamLocator* locator)
    : ctx_(ctx), details_(details), monitor_(monitor), locator_(locator), http_(ctx) {
  // Anything under /api/ that no route takes: a JSON 404 (the HTTP server's generic one is text).
  add(HttpMethod::Get | HttpMethod::Post | HttpMethod::Put | HttpMethod::Delete | HttpMethod::Patch, "/api/",
      PathMatch::Prefix,
      [this](HttpExchange& ex) { reply_error(ex, 404, "no such API resource: " + ex.info().path); });
}

// The HTTP server, destroyed next, closes the connections of the held exchanges: their
// gatherings go with them, and none calls back into this object (a gatherer's callback reaches
// finish() only while its exchange is there).
ApiServer::~ApiServer() = default;

void ApiServer::stop_accepting() { http_.stop_accepting(); }

bool ApiServer::authorized(const HttpExchange& ex, Access access) const {
  const auto& api = ctx_.config->api;
  if (!api.token || access == Access::Public) return true;
  if (access == Access::Metrics && api.metrics_public) return true;
  const std::string_view* h = ex.header("Authorization");
  if (!h) return false;
  const std::string_view given(*h);
  const std::string_view scheme = "Bearer ";
  if (given.size() != scheme.size() + api.token->size() || given.substr(0, scheme.size()) != scheme)
    return false;
  // Compared in constant time: the token is a secret.
  return CRYPTO_memcmp(given.data() + scheme.size(), api.token->data(), api.token->size()) == 0;
}

void ApiServer::add(HttpMethods methods, std::string path, PathMatch match, HttpRouteTable::Handler h,
                    Access access) {
  http_.routes().add(methods, std::move(path), match,
                     [this, h = std::move(h), access](HttpExchange& ex) {
                       if (authorized(ex, access)) return h(ex);
                       const HttpRequestInfo& info = ex.info();
                       ex.add_header("WWW-Authenticate", "Bearer realm=\"rill\"");
                       ctx_.log->info("api: {} {} {}: missing or wrong token", info.peer,
                                      method_name(info.method), info.path);
                       reply_error(ex, 401, "missing or wrong token (Authorization: Bearer TOKEN)");
                     });
}

void ApiServer::reply_text(HttpExchange& ex, int status, std::string_view content_type, std::string_view body,
                           std::string_view cache) {
  ex.add_header("Content-Type", content_type);
  ex.add_header("Cache-Control", cache);
  ex.add_header("X-Content-Type-Options", "nosniff");
  ex.reply(status, body);
}

void ApiServer::reply_json(HttpExchange& ex, int status, const json& body) {
  reply_text(ex, status, "application/json", body.dump(2) + "\n");
}

void ApiServer::reply_error(HttpExchange& ex, int status, const std::string& why) {
  reply_json(ex, status, json{{"error", why}});
}

void ApiServer::reply_no_content(HttpExchange& ex) {
  ex.add_header("Cache-Control", "no-cache");
  ex.reply(204, std::string_view());
}

void ApiServer::gather(HttpExchange& ex, Gathered done, protocol::LinkRequest request,
                       std::function<json()> local) {
  auto owned = std::make_unique<Pending>();
  Pending& p = *owned;
  p.done = std::move(done);
  p.gatherer = std::make_unique<workers::StatsGatherer>(
      details_, [this, &p](json all) { finish(p, std::move(all)); }, std::chrono::milliseconds(2000),
      std::move(request), std::move(local));
  p.held = ex.hold(std::move(owned));
  p.gatherer->start();
}

void ApiServer::finish(Pending& p, json gathered) {
  HttpExchange* ex = p.held.get();
  if (!ex) return;  // gone without its abandonment reaching us (not expected)
  // Read after every worker answered (each published its counters to answer): the rows are at
  // least what any answer said, and they keep what dead workers had counted.
  if (monitor_) {
    const uint32_t slots = locator_ ? locator_->options().workers : 1;
    gathered["rows"] = monitor_->all_rows(slots);
  }
  // The answer gives the state up: it (and its gatherer, which called us) is destroyed on the
  // next loop turn, not under this call.
  p.done(*ex, std::move(gathered));
}

}  // namespace rill::api
