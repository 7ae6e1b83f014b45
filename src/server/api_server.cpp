#include "rill/server/api_server.h"

#include <event2/http.h>
#include <openssl/crypto.h>

#include "rill/workers/stream_locator.h"
#include "rill/workers/worker_monitor.h"
#include "rill/workers/worker_stats.h"

namespace rill::server {

using nlohmann::json;

struct ApiServer::Pending {
  ApiServer* server = nullptr;
  evhttp_request* req = nullptr;
  Gathered done;
  std::unique_ptr<workers::StatsGatherer> gatherer;
};

ApiServer::ApiServer(net::ServerContext& ctx) : ctx_(ctx), http_(ctx) {
  // Anything under /api/ that no route takes: a JSON 404 (the HTTP server's generic one is text).
  add(HttpMethod::Get | HttpMethod::Post | HttpMethod::Put | HttpMethod::Delete | HttpMethod::Patch, "/api/",
      PathMatch::Prefix, [this](evhttp_request* req, const HttpRequestInfo& info) {
        reply_error(req, info, 404, "no such API resource: " + info.path);
      });
}

ApiServer::~ApiServer() {
  for (auto& [raw, p] : pending_) {
    http_.set_close_callback(evhttp_request_get_connection(p->req), nullptr, nullptr);
  }
  pending_.clear();  // cancels the gatherers before the HTTP server frees the requests
}

void ApiServer::listen(int fd) { http_.listen(fd); }
void ApiServer::stop_accepting() { http_.stop_accepting(); }

bool ApiServer::authorized(evhttp_request* req, Access access) const {
  const auto& api = ctx_.config->api;
  if (!api.token || access == Access::Public) return true;
  if (access == Access::Metrics && api.metrics_public) return true;
  const char* h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
  if (!h) return false;
  const std::string_view given(h);
  const std::string_view scheme = "Bearer ";
  if (given.size() != scheme.size() + api.token->size() || given.substr(0, scheme.size()) != scheme) return false;
  // Compared in constant time: the token is a secret.
  return CRYPTO_memcmp(given.data() + scheme.size(), api.token->data(), api.token->size()) == 0;
}

void ApiServer::add(HttpMethods methods, std::string path, PathMatch match, HttpRouteTable::Handler h, Access access) {
  http_.routes().add(methods, std::move(path), match,
                     [this, h = std::move(h), access](evhttp_request* req, const HttpRequestInfo& info) {
                       if (authorized(req, access)) return h(req, info);
                       evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
                                         "Bearer realm=\"rill\"");
                       ctx_.log->info("api: {} {} {}: missing or wrong token", info.peer, method_name(info.method),
                                      info.path);
                       reply_error(req, info, 401, "missing or wrong token (Authorization: Bearer TOKEN)");
                     });
}

void ApiServer::reply_text(evhttp_request* req, const HttpRequestInfo& info, int status, std::string_view content_type,
                           std::string_view body, std::string_view cache) {
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", std::string(content_type).c_str());
  evhttp_add_header(h, "Cache-Control", std::string(cache).c_str());
  evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
  http_.log_access(info, status, http_.reply(req, status, body));
}

void ApiServer::reply_json(evhttp_request* req, const HttpRequestInfo& info, int status, const json& body) {
  reply_text(req, info, status, "application/json", body.dump(2) + "\n");
}

void ApiServer::reply_error(evhttp_request* req, const HttpRequestInfo& info, int status, const std::string& why) {
  reply_json(req, info, status, json{{"error", why}});
}

void ApiServer::reply_no_content(evhttp_request* req, const HttpRequestInfo& info) {
  evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-cache");
  http_.log_access(info, 204, http_.reply(req, 204, std::string_view()));
}

void ApiServer::gather(evhttp_request* req, Gathered done, protocol::LinkRequest request,
                       std::function<json()> local) {
  auto owned = std::make_unique<Pending>();
  Pending* p = owned.get();
  p->server = this;
  p->req = req;
  p->done = std::move(done);
  p->gatherer = std::make_unique<workers::StatsGatherer>(
      ctx_, [this, p](json all) { finish(p, std::move(all)); }, std::chrono::milliseconds(2000), std::move(request),
      std::move(local));
  pending_.emplace(p, std::move(owned));
  http_.set_close_callback(evhttp_request_get_connection(req), &ApiServer::on_client_close, p);
  p->gatherer->start();
}

void ApiServer::on_client_close(evhttp_connection*, void* arg) {
  auto* p = static_cast<Pending*>(arg);
  ApiServer* self = p->server;
  evhttp_request* req = p->req;
  // The gatherer cannot be destroyed from inside its own callback; here it is not running.
  self->pending_.erase(p);
  // Detached from its connection, the request is ours to free (see hls_remote.cpp).
  if (evhttp_request_get_connection(req) == nullptr) evhttp_request_free(req);
}

void ApiServer::finish(Pending* p, json gathered) {
  auto it = pending_.find(p);
  if (it == pending_.end()) return;
  std::unique_ptr<Pending> owned = std::move(it->second);
  pending_.erase(it);
  http_.set_close_callback(evhttp_request_get_connection(p->req), nullptr, nullptr);
  // Read after every worker answered (each published its counters to answer): the rows are at
  // least what any answer said, and they keep what dead workers had counted.
  if (ctx_.monitor) {
    const uint32_t slots = ctx_.locator ? ctx_.locator->options().workers : 1;
    gathered["rows"] = ctx_.monitor->all_rows(slots);
  }
  Gathered done = std::move(p->done);
  done(std::move(gathered));  // `owned` (and its gatherer, which called us: it allows that) goes last
}

}  // namespace rill::server
