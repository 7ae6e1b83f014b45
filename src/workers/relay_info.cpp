#include "rill/workers/relay_info.h"

namespace rill::workers {

const char* to_string(RelayKind k) {
  switch (k) {
    case RelayKind::EdgePull:
      return "edge-pull";
    case RelayKind::Push:
      return "push";
    case RelayKind::Pull:
      return "pull";
  }
  return "?";
}

const char* to_string(RelayState s) {
  switch (s) {
    case RelayState::Connecting:
      return "connecting";
    case RelayState::Up:
      return "up";
    case RelayState::Retrying:
      return "retrying";
    case RelayState::Standby:
      return "standby";
    case RelayState::Closed:
      return "closed";
  }
  return "?";
}

RelayInfo describe_relay(std::string id, RelayKind kind, const std::string& app, const std::string& name,
                         std::string url, const RelayProgress& progress, uint64_t open_bytes) {
  RelayInfo r;
  r.id = std::move(id);
  r.kind = kind;
  r.app = app;
  r.name = name;
  r.url = std::move(url);
  r.state = progress.state;
  r.since_ms = progress.since_ms;
  r.bytes = progress.bytes + open_bytes;
  r.reconnects = progress.reconnects;
  return r;
}

}  // namespace rill::workers
