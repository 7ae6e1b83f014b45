#include "rill/server/admission_checks.h"

namespace rill::server {

// Cheapest first: the address, then the token; a check that asks a server over the network last.
void install_admission_checks(StreamGate& gate, net::WorkerCore& ctx) {
  gate.add_check(make_access_rules_check(ctx));
  gate.add_check(make_token_check(ctx));
  gate.add_check(make_callback_check(ctx));
}

}  // namespace rill::server
