#pragma once
// `rill token`: prints the query a client appends to a stream name to publish or play it under
// auth mode "token" (docs/security.md), so operators need not write HMAC code.
//
//   rill token --secret S | --secret-file F  --publish|--play APP/NAME  [--ttl 1h | --expires UNIX]
#include <cstdio>

namespace rill::server {

// argv[0] is "token". Returns the exit status: 0, or 2 on a usage error (told on `err`).
int run_token_command(int argc, char** argv, std::FILE* out, std::FILE* err);

}  // namespace rill::server
