#pragma once
// The relays of one worker as the control plane sees and steers them (GET/POST/DELETE
// /api/v1/relays, docs/api.md). cluster::Cluster implements it; the worker link and the API use
// it through WorkerCore::relays without depending on the cluster module.
#include <string>
#include <vector>

#include "rill/workers/relay_info.h"

namespace rill::workers {

class RelayControl {
 public:
  virtual ~RelayControl() = default;
  // Every relay that is not closed: edge pulls, static and run-time pulls, pushes.
  virtual std::vector<RelayInfo> relays() const = 0;
  // Creates a run-time push or pull with this id; "" when created, else why not.
  virtual std::string add_relay(const std::string& id, const std::string& kind, const std::string& app,
                                const std::string& name, const std::string& url) = 0;
  // Ends the run-time relay with this id; false when this worker has none.
  virtual bool remove_relay(const std::string& id) = 0;
};

}  // namespace rill::workers
