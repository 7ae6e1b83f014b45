#pragma once
// ApiServer: the control plane on api.listen (docs/api.md) — its own HttpServer (never on
// http.listen), its own route table, the token check, JSON replies and errors, and the one way a
// handler asks every worker (gather / broadcast over the worker link, workers/worker_stats.h).
//
// Other modules mount routes with add() (the cluster's /api/v1/relays): a handler gets the
// exchange already authorized and answers it with reply_json / reply_error (which, like every
// reply of the exchange, write the access log line).
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "rill/http/http_exchange.h"
#include "rill/http/http_router.h"
#include "rill/http/http_server.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/worker_link_frame.h"

namespace rill::workers {
class StreamLocator;
class WorkerDetails;
class WorkerMonitor;
}  // namespace rill::workers

namespace rill::api {

// The HTTP stack's names, unqualified in the API's handlers (server/http_names.h says why).
using http::HttpExchange;
using http::HttpHeld;
using http::HttpHeldState;
using http::HttpMethod;
using http::HttpMethods;
using http::HttpRequestInfo;
using http::HttpRouteTable;
using http::HttpServer;
using http::PathMatch;

class ApiServer {
 public:
  // `details` answers for this worker (and its actions: kick, drop, relays); `monitor` (null:
  // none) has the shared counter rows of the `locator`'s slots (null: one). All outlive the server.
  ApiServer(net::WorkerCore& ctx, workers::WorkerDetails& details, workers::WorkerMonitor* monitor,
            const workers::StreamLocator* locator);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  void stop_accepting();

  enum class Access : uint8_t {
    Token,    // api.token, when set, is required
    Metrics,  // as Token, unless api.metrics_public
    Public,   // never (the console's static files)
  };
  // Mounts a route; the handler runs only for an authorized request (else 401).
  void add(HttpMethods methods, std::string path, PathMatch match, HttpRouteTable::Handler h,
           Access access = Access::Token);

  void reply_json(HttpExchange& ex, int status, const nlohmann::json& body);
  void reply_text(HttpExchange& ex, int status, std::string_view content_type, std::string_view body,
                  std::string_view cache = "no-cache");
  // {"error": why} with the status.
  void reply_error(HttpExchange& ex, int status, const std::string& why);
  void reply_no_content(HttpExchange& ex);

  // Holds the exchange, asks every worker (`request`; STATS by default) and calls done(ex,
  // gathered) later, unless the client went away first (then the gathering is cancelled: the
  // held exchange owns it):
  // gathered = {"workers": [...], "errors": [...], "rows": [shared counter rows]}. `local` is
  // this worker's own answer for a request other than STATS.
  using Gathered = std::function<void(HttpExchange&, nlohmann::json)>;
  void gather(HttpExchange& ex, Gathered done,
              protocol::LinkRequest request = protocol::LinkStatsRequest{false},
              std::function<nlohmann::json()> local = nullptr);

  net::WorkerCore& context() { return ctx_; }
  workers::WorkerDetails& details() { return details_; }
  HttpServer& http() { return http_; }

 private:
  struct Pending;
  bool authorized(const HttpExchange& ex, Access access) const;
  void finish(Pending& p, nlohmann::json gathered);

  net::WorkerCore& ctx_;
  workers::WorkerDetails& details_;
  workers::WorkerMonitor* monitor_;
  const workers::StreamLocator* locator_;
  HttpServer http_;
};

}  // namespace rill::api
