#pragma once
// The access log line of a publish or play session when it ends (RTMP, RTMPS, HTTP-FLV): one
// line per session, never per frame (core/access_line.h renders it). The close reasons the
// sessions give are named as docs/operations.md lists them ("client closed", "kicked",
// "refused: WHY", "idle timeout", "slow player", "server stopped", "stream ended", ...).
#include <string_view>

#include "rill/core/access_line.h"
#include "rill/net/worker_core.h"

namespace rill::server {

// A session's close reason as the access log names it: "peer closed" (or reset) -> "client closed", the
// API's kicks -> "kicked", a worker's stop -> "server stopped", "slow consumer" -> "slow
// player"; any other reason as given.
std::string_view access_close_reason(std::string_view reason);

// Writes `a` (its close_reason passed through access_close_reason) to the worker's access log,
// when there is one.
void log_session_end(const net::WorkerCore& ctx, core::SessionAccess a);

}  // namespace rill::server
