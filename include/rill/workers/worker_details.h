#pragma once
// The control plane's details of one worker (docs/api.md), added to its STATS answer so that
// any worker can answer the API for the whole server over the worker link:
//
//   "clients":        the publishers and players connected to this worker (at most
//                     kMaxClientsReported, "clients_truncated" says when more were left out)
//   "stream_details": per local stream: owner?, publisher, video/audio from the sequence
//                     headers, fps, input bitrate, players per protocol, bytes, HLS
//   "hls_viewers":    per stream, the HLS viewers this worker served recently
//   "counters":       this slot's row of the shared counters (workers/server_counters.h)
//   "process":        CPU, memory, descriptors, loop lag
//   "relays":         this worker's edge pulls, pulls and pushes (workers/relay_control.h)
//
// A stream's details carry its recording ("record", record_view.h) where this worker owns it.
// And the actions the API routes to workers: close a client by id, drop a stream's publisher,
// start or stop a stream's recording.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "rill/media/stream_key.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/worker_link_frame.h"
#include "rill/workers/relay_control.h"

namespace rill::workers {

class HlsFetcher;
class StreamLocator;
class WorkerMonitor;

inline constexpr size_t kMaxClientsReported = 10000;  // ~2.5 MB of JSON, under the 4 MiB Stats frame bound

// Built by server::Worker with the services it reports on, which outlive it: the locator (the
// streams this worker owns, its worker links; null: a lone worker), the HLS fetcher (null: streams
// are not shared), the monitor (null: none) and the relays (null: no cluster module).
class WorkerDetails {
 public:
  WorkerDetails(net::WorkerCore& core, const StreamLocator* locator, const HlsFetcher* fetcher,
                WorkerMonitor* monitor, RelayControl* relays)
      : core_(core), locator_(locator), fetcher_(fetcher), monitor_(monitor), relays_(relays) {}
  WorkerDetails(const WorkerDetails&) = delete;
  WorkerDetails& operator=(const WorkerDetails&) = delete;

  // This worker's STATS answer (workers/worker_stats.h: sessions, streams, worker links) with the
  // details above.
  nlohmann::json stats();

  // Closes the session with this id, if it is one of this worker's. {"closed": 0 | 1}.
  nlohmann::json kick_client(uint64_t id);
  // Closes the local publisher of app/name (an RTMP publisher gets NetStream.Unpublish first when
  // its session supports it). {"closed": 0 | 1}.
  nlohmann::json drop_publisher(const std::string& key);
  // Starts or stops the recording of app/name where this worker records it (its owner):
  // {"found": 0|1, "records": 0|1 (the app records), "record": {state...}}.
  nlohmann::json control_record(const media::StreamKey& key, bool start);
  // Run-time relays (POST/DELETE /api/v1/relays) on this worker: {"created": 0|1, "error": ...}
  // and {"closed": 0|1}.
  nlohmann::json add_relay(const protocol::LinkRelayAddRequest& r);
  nlohmann::json remove_relay(const std::string& id);

  net::WorkerCore& core() { return core_; }
  const StreamLocator* locator() const { return locator_; }

  // Adds what a service above this layer knows of a stream (APP, NAME) to its row of
  // stream_details, e.g. its exec children (server::ExecHooks).
  using StreamExtras = std::function<void(const std::string&, const std::string&, nlohmann::json&)>;
  void set_stream_extras(StreamExtras f) { stream_extras_ = std::move(f); }
  // Likewise for the worker's own STATS answer.
  using WorkerExtras = std::function<void(nlohmann::json&)>;
  void set_worker_extras(WorkerExtras f) { worker_extras_ = std::move(f); }

 private:
  void add_details(nlohmann::json& stats);

  net::WorkerCore& core_;
  const StreamLocator* locator_;
  const HlsFetcher* fetcher_;
  WorkerMonitor* monitor_;
  RelayControl* relays_;
  StreamExtras stream_extras_;
  WorkerExtras worker_extras_;
};

}  // namespace rill::workers
