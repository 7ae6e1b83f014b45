#pragma once
// What the relays of a worker report (logs, statistics, GET /api/v1/relays): one plain value per
// edge pull, static pull or push. Defined here, below the cluster module that runs the relays, so
// that the control plane (workers/relay_control.h, the API) reads the same value the cluster makes.
#include <cstdint>
#include <string>

namespace rill::workers {

enum class RelayKind : uint8_t { EdgePull, Push, Pull };
const char* to_string(RelayKind k);  // "edge-pull", "push", "pull"

enum class RelayState : uint8_t {
  Connecting,  // an attempt is under way
  Up,          // media flows
  Retrying,    // every target failed: waiting for the next round (back-off)
  Standby,     // another worker of this server runs it (static pull)
  Closed,      // over (idle, ended at the origin, removed)
};
const char* to_string(RelayState s);  // "connecting", "up", "retrying", "standby", "closed"

struct RelayInfo {
  std::string id;    // unique on this server: "w<worker>-<seq>"
  RelayKind kind = RelayKind::EdgePull;
  std::string app;
  std::string name;
  std::string url;   // the upstream in use, or the next one tried
  RelayState state = RelayState::Connecting;
  int64_t since_ms = 0;  // when state was entered (the worker's clock)
  uint64_t bytes = 0;    // media bytes moved, every connection included
  uint32_t reconnects = 0;
};

// What a relay keeps for its RelayInfo: its state since when, and its totals so far (the bytes
// of connections already closed; the open one's are added when described).
struct RelayProgress {
  RelayState state = RelayState::Connecting;
  int64_t since_ms = 0;
  uint64_t bytes = 0;
  uint32_t reconnects = 0;
};

// A relay described: its identity, the URL in use, its progress plus the open connection's bytes.
RelayInfo describe_relay(std::string id, RelayKind kind, const std::string& app, const std::string& name,
                         std::string url, const RelayProgress& progress, uint64_t open_bytes);

}  // namespace rill::workers
