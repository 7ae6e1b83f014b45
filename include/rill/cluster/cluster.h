#pragma once
// Cluster: the relays of one worker — edge pulls started on demand by the admission gate, static
// pulls (apps.X.pull and those the API creates), and the push outputs every published stream gets
// from its app (apps.X.push, an edge's `publish: forward`). docs/cluster.md.
//
// It is also the worker's relay registry: relays() describes every relay of this worker;
// create()/remove() add and end static pulls and pushes at run time (POST/DELETE /api/v1/relays).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rill/cluster/origin_health.h"
#include "rill/cluster/push_output.h"
#include "rill/cluster/relay_info.h"
#include "rill/cluster/stream_pull.h"
#include "rill/config/config.h"
#include "rill/media/stream_output.h"
#include "rill/net/worker_core.h"
#include "rill/workers/relay_control.h"

namespace rill::cluster {

// A relay asked for at run time (the API's POST /api/v1/relays body).
struct RelayRequest {
  RelayKind kind = RelayKind::Pull;  // Pull or Push
  std::string app;
  std::string name;
  std::string url;  // rtmp://host[:port]/app[/name]
  std::string id;   // set by the API (the same on every worker); empty: this worker names it
};

struct RelayCreated {
  std::optional<std::string> id;  // set: created
  std::string error;              // else why not ("unknown app x", "kind must be push or pull", ...)
};

class Cluster : public workers::RelayControl {
 public:
  // Its pulls claim their streams through `locator`, which outlives the cluster.
  Cluster(net::WorkerCore& ctx, workers::StreamLocator& locator);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Starts the configured static pulls (each worker tries; the ownership table elects one).
  void start();
  // Ends every relay (worker stopping).
  void stop();

  // The gate, for a play of `key` in an edge app that nobody on this server publishes: starts (or
  // joins) the one upstream pull, then answers `found` (true: media flows, or another worker has
  // the stream; false: no origin has it). May answer before returning.
  void edge_play(const media::StreamKey& key, const config::AppConfig& app, StreamPull::Found found);
  // An edge pull of `key` runs on this worker and has not brought media yet.
  bool pull_pending(const media::StreamKey& key) const;
  // An HLS request for `key` in an edge app (keeps a pull from idling out).
  void touch(const media::StreamKey& key);

  // The registry's OutputFactory: default_outputs plus pushes and an edge's forward.
  media::StreamOutputs outputs(media::Stream& stream, const config::AppConfig& app, media::PublishOrigin origin);

  // ---- the relay registry (the API's POST and DELETE)
  RelayCreated create(const RelayRequest& req);
  // True when `id` named a relay of this worker created by create() (now ended).
  bool remove(const std::string& id);

  // ---- workers::RelayControl (the control plane's view)
  std::vector<RelayInfo> relays() const override;
  std::string add_relay(const std::string& id, const std::string& kind, const std::string& app,
                        const std::string& name, const std::string& url) override;
  bool remove_relay(const std::string& id) override { return remove(id); }

 private:
  std::string next_id();
  StreamPull& start_pull(PullOptions opts);
  void reap();

  net::WorkerCore& ctx_;
  workers::StreamLocator& locator_;
  OriginHealth health_;
  std::map<std::string, std::unique_ptr<StreamPull>> edge_pulls_;  // by "app/name"
  std::map<std::string, std::unique_ptr<StreamPull>> static_pulls_;  // by id
  // Pushes created at run time: by id, applied to the stream's next publish on this worker.
  std::map<std::string, RelayRequest> runtime_pushes_;
  std::shared_ptr<PushSet> pushes_ = std::make_shared<PushSet>();
  uint32_t seq_ = 0;
  bool stopped_ = false;
};

}  // namespace rill::cluster
