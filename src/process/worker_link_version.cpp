// In its own translation unit so that a test build can link another definition before the
// process archive's (CMakeLists.txt, rill-upgrade-incompatible): nothing else lives here.
#include "rill/process/upgrade_handoff.h"

#ifndef RILL_WORKER_LINK_VERSION
#define RILL_WORKER_LINK_VERSION rill::process::kWorkerLinkVersion
#endif

namespace rill::process {

uint32_t worker_link_version() { return RILL_WORKER_LINK_VERSION; }

}  // namespace rill::process
