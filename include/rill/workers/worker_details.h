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
// And the two actions the API routes to workers: close a client by id, drop a stream's publisher.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "rill/net/worker_core.h"
#include "rill/protocol/worker_link_frame.h"
#include "rill/workers/relay_control.h"

namespace rill::workers {

inline constexpr size_t kMaxClientsReported = 10000;  // ~2.5 MB of JSON, under the 4 MiB Stats frame bound

void add_worker_details(net::WorkerCore& ctx, nlohmann::json& stats);

// Closes the session with this id, if it is one of this worker's. {"closed": 0 | 1}.
nlohmann::json kick_client(net::WorkerCore& ctx, uint64_t id);
// Closes the local publisher of app/name (an RTMP publisher gets NetStream.Unpublish first when
// its session supports it). {"closed": 0 | 1}.
nlohmann::json drop_publisher(net::WorkerCore& ctx, const std::string& key);
// Run-time relays (POST/DELETE /api/v1/relays) on this worker: {"created": 0|1, "error": ...}
// and {"closed": 0|1}.
nlohmann::json add_relay(net::WorkerCore& ctx, const protocol::LinkRelayAddRequest& r);
nlohmann::json remove_relay(net::WorkerCore& ctx, const std::string& id);

}  // namespace rill::workers
