#pragma once
// The cluster's names for the relay descriptions it makes (workers/relay_info.h defines them, so
// that the control plane below this module reads the same values).
#include "rill/workers/relay_info.h"

namespace rill::cluster {

using workers::describe_relay;
using workers::RelayInfo;
using workers::RelayKind;
using workers::RelayProgress;
using workers::RelayState;

}  // namespace rill::cluster
