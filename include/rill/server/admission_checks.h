#pragma once
// The admission checks of docs/security.md, in the order the gate runs them: access rules
// (allow/deny by address), signed tokens, HTTP callbacks. Each reads its app's configuration at
// check time, so a reload (new workers with the new configuration) applies at once.
#include <memory>

#include "rill/net/worker_core.h"
#include "rill/server/stream_gate.h"

namespace rill::server {

std::unique_ptr<AdmissionCheck> make_access_rules_check(net::WorkerCore& ctx);
std::unique_ptr<AdmissionCheck> make_token_check(net::WorkerCore& ctx);
// Needs ctx.base, ctx.timers and ctx.sessions.
std::unique_ptr<AdmissionCheck> make_callback_check(net::WorkerCore& ctx);

// Adds every check above to `gate`.
void install_admission_checks(StreamGate& gate, net::WorkerCore& ctx);

}  // namespace rill::server
