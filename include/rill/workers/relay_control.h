#pragma once
// The relays of one worker as the control plane sees and steers them (GET/POST/DELETE
// /api/v1/relays, docs/api.md). cluster::Cluster implements it; the worker link and the API use
// it through ServerContext::relays without depending on the cluster module.
#include <cstdint>
#include <string>
#include <vector>

namespace rill::workers {

struct RelayRow {
  std::string id;     // unique on the server; a run-time relay has the same id on every worker
  std::string kind;   // "edge-pull" | "push" | "pull"
  std::string app;
  std::string name;
  std::string url;    // the upstream or target in use (or tried next)
  std::string state;  // "connecting" | "up" | "retrying" | "standby"
  int64_t age_ms = 0; // how long it has been in `state`
  uint64_t bytes = 0;
  uint32_t reconnects = 0;
};

class RelayControl {
 public:
  virtual ~RelayControl() = default;
  virtual std::vector<RelayRow> relay_rows() const = 0;
  // Creates a run-time push or pull with this id; "" when created, else why not.
  virtual std::string add_relay(const std::string& id, const std::string& kind, const std::string& app,
                                const std::string& name, const std::string& url) = 0;
  // Ends the run-time relay with this id; false when this worker has none.
  virtual bool remove_relay(const std::string& id) = 0;
};

}  // namespace rill::workers
