#pragma once
// Statistics across workers. Each worker answers "STATS" on its worker socket with a Stats frame
// of WorkerDetails::stats() (workers/worker_details.h): its slot, pid, sessions (per protocol),
// streams (publisher or worker link, subscribers, link senders) and worker links — sessions
// described by Session::describe().
// StatsGatherer asks every other worker (a LinkQuery each) and merges the answers:
// {"workers": [...sorted by slot, generation, pid], "errors": [...]}. "Every other worker" is
// the current generation's slots and the retiring workers of older generations (after a reload,
// found by their per-pid sockets: worker_sockets.h), so both generations are counted. Exposed for tools and tests as "STATS ALL"
// on any worker's socket; the HTTP API gathers the same JSON.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rill/core/timer_queue.h"
#include "rill/net/worker_core.h"
#include "rill/workers/link_query.h"

namespace rill::workers {

class WorkerDetails;

class StatsGatherer {
 public:
  using Done = std::function<void(nlohmann::json)>;
  using Local = std::function<nlohmann::json()>;
  // By default it asks STATS and answers details.stats() for this worker. Another request (KICK,
  // DROP: answered with a Stats frame too) goes with `local`, this worker's own answer. The other
  // workers are those of details.locator() (none without one). `details` outlives the gatherer.
  StatsGatherer(WorkerDetails& details, Done done,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(2000),
                protocol::LinkRequest request = protocol::LinkStatsRequest{false}, Local local = nullptr);
  ~StatsGatherer();
  StatsGatherer(const StatsGatherer&) = delete;
  StatsGatherer& operator=(const StatsGatherer&) = delete;

  // Asks every other worker. `done` runs later from the event loop (never inside start()), once
  // every worker answered, failed or timed out. Destroying the gatherer cancels it.
  void start();

 private:
  struct Peer;
  void add_peer(int slot, const std::string& path, bool retiring);
  void answered(Peer& p, LinkQuery::Result&& r);
  void finish();

  WorkerDetails& details_;
  net::WorkerCore& ctx_;
  Done done_;
  std::chrono::milliseconds timeout_;
  protocol::LinkRequest request_;
  Local local_answer_;
  nlohmann::json local_;
  std::vector<std::unique_ptr<Peer>> peers_;
  size_t pending_ = 0;
  std::vector<std::string> errors_;
  std::optional<TimerId> timer_;  // finishes at once when there is nobody to ask
};

}  // namespace rill::workers
