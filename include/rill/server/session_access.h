#pragma once
// The access log line of a publish or play session when it ends (RTMP, RTMPS, HTTP-FLV): one
// line per session, never per frame (core/access_line.h renders it). The close reasons the
// sessions give are named as docs/operations.md lists them ("client closed", "kicked",
// "refused: WHY", "idle timeout", "slow player", "server stopped", "stream ended", ...).
#include <string>
#include <string_view>

#include "rill/core/access_line.h"
#include "rill/http/http_exchange.h"
#include "rill/media/stream_key.h"
#include "rill/net/worker_core.h"

namespace rill::server {

// A session's close reason as the access log names it: "peer closed" (or reset) -> "client closed", the
// API's kicks -> "kicked", a worker's stop -> "server stopped", "slow consumer" -> "slow
// player"; any other reason as given.
std::string_view access_close_reason(std::string_view reason);

// Writes `a` (its close_reason passed through access_close_reason) to the worker's access log,
// when there is one.
void log_session_end(const net::WorkerCore& ctx, core::SessionAccess a);

// What the line of a session that answers one HTTP request (an HTTP-FLV player, a recording's
// download) takes from that request, kept when the session starts: the exchange is gone by the
// time the session ends.
struct HttpSessionRequest {
  http::HttpRequestInfo info;  // peer, query, start time
  std::string agent;           // User-Agent and Referer, kept only when there is an access log
  std::string referer;
  HttpSessionRequest(const net::WorkerCore& ctx, const http::HttpExchange& ex);
};

// Writes the line of such a session (log_session_end): `a` says what the session did (protocol,
// command, bytes, close reason); the peer, the query (redacted as log.redact_params says), the
// duration since the request, the agent and the referer come from `request`, the app and the name
// from `key`.
void log_http_session_end(const net::WorkerCore& ctx, const HttpSessionRequest& request,
                          const media::StreamKey& key, core::SessionAccess a);

}  // namespace rill::server
