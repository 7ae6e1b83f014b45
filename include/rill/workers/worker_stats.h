#pragma once
// Statistics across workers. Each worker answers "STATS" on its relay socket with
// worker_stats(): its slot, pid, sessions, streams (publisher or relay link, subscribers, relay
// senders) and relay links. StatsGatherer collects every worker's answer asynchronously and
// merges them: {"workers": [...sorted by slot], "errors": [...]}. Exposed for tools and tests as
// "STATS ALL" on any worker's relay socket (the HTTP API will serve the same JSON).
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rill/net/server_context.h"

struct event;

namespace rill::workers {

nlohmann::json worker_stats(net::ServerContext& ctx);

class StatsGatherer {
 public:
  using Done = std::function<void(nlohmann::json)>;
  StatsGatherer(net::ServerContext& ctx, Done done, std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));
  ~StatsGatherer();
  StatsGatherer(const StatsGatherer&) = delete;
  StatsGatherer& operator=(const StatsGatherer&) = delete;

  // Connects to every other worker. `done` runs later from the event loop (never inside start()),
  // once every worker answered or failed, or at the timeout. Destroying the gatherer cancels it.
  void start();

 private:
  struct Peer;
  static void on_peer_read(int fd, short what, void* arg);
  static void on_timeout(int fd, short what, void* arg);
  void peer_done(Peer& p, const std::string& error);
  void maybe_finish();
  void finish();

  net::ServerContext& ctx_;
  Done done_;
  std::chrono::milliseconds timeout_;
  nlohmann::json local_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<std::string> errors_;
  event* timer_ = nullptr;
  bool finished_ = false;
};

}  // namespace rill::workers
