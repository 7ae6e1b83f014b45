#pragma once
// The admission checks of docs/security.md, in the order the gate runs them: access rules
// (allow/deny by address), signed tokens, HTTP callbacks. Each reads its app's configuration at
// check time, so a reload (new workers with the new configuration) applies at once.
#include <memory>

#include "rill/net/server_context.h"
#include "rill/server/stream_gate.h"

namespace rill::server {

std::unique_ptr<AdmissionCheck> make_access_rules_check(net::ServerContext& ctx);
std::unique_ptr<AdmissionCheck> make_token_check(net::ServerContext& ctx);
// Needs ctx.base, ctx.timers and ctx.sessions.
std::unique_ptr<AdmissionCheck> make_callback_check(net::ServerContext& ctx);

// Adds every check above to `gate`.
void install_admission_checks(StreamGate& gate, net::ServerContext& ctx);

}  // namespace rill::server
