#include "rill/server/session_access.h"

#include <ctime>
#include <string>

namespace rill::server {

std::string_view access_close_reason(std::string_view reason) {
  // The peer's FIN, or its RST (a player that closes with unread data: "read: Connection reset by peer").
  if (reason == "peer closed" || reason.ends_with("Connection reset by peer") ||
      reason.ends_with("Broken pipe")) {
    return "client closed";
  }
  // workers/worker_details.cpp: the API's kick and drop.
  if (reason == "closed by the API" || reason == "publisher dropped by the API") return "kicked";
  if (reason == "worker shutting down" || reason == "worker stopping" || reason == "worker exiting") {
    return "server stopped";
  }
  if (reason == "slow consumer") return "slow player";
  return reason;
}

void log_session_end(const net::WorkerCore& ctx, core::SessionAccess a) {
  if (!ctx.access_log) return;
  a.close_reason = access_close_reason(a.close_reason);
  ctx.access_log->info(core::format_session_access(a, ctx.config->log.access_format, std::time(nullptr)));
}

HttpSessionRequest::HttpSessionRequest(const net::WorkerCore& ctx, const http::HttpExchange& ex)
    : info(ex.info()) {
  if (!ctx.access_log) return;
  if (const std::string_view* a = ex.header("User-Agent")) agent = *a;
  if (const std::string_view* r = ex.header("Referer")) referer = *r;
}

void log_http_session_end(const net::WorkerCore& ctx, const HttpSessionRequest& request,
                          const media::StreamKey& key, core::SessionAccess a) {
  if (!ctx.access_log) return;
  a.peer = request.info.peer;
  a.app = key.app;
  a.name = key.name;
  const std::string args = core::redact_query(request.info.query, ctx.config->log.redact_params);
  a.args = args;
  a.duration_ms = ctx.timers->now_ms() - request.info.started_ms;
  a.agent = request.agent;
  a.referer = request.referer;
  log_session_end(ctx, a);
}

}  // namespace rill::server
