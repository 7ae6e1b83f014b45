#pragma once
// HTTP requests through the admission gate: HTTP-FLV players and HLS playlist and segment
// requests ask server/stream_gate.h exactly as RTMP does, with the request's query and peer.
// Admitted, the continuation runs (now, or later when a check answers: the exchange is held
// meanwhile); not admitted, the request is answered here: 404 when there is nothing to play, 403
// when a check refused. A client that goes away while its decision is pending cancels it.
#include <functional>

#include "rill/http/http_exchange.h"
#include "rill/http/http_router.h"
#include "rill/media/stream_key.h"
#include "rill/net/worker_core.h"
#include "rill/server/http_names.h"
#include "rill/server/stream_gate.h"

namespace rill::server {

// The request is the exchange's (HttpExchange::info).
using HttpAdmitted = std::function<void(HttpExchange& ex, GateDecision d)>;

// HEAD requests ask as a probe: nothing is created for them. `gate` outlives the held requests.
void admit_http_play(net::WorkerCore& ctx, StreamGate& gate, HttpExchange& ex, GateProto proto,
                     const media::StreamKey& key, HttpAdmitted admitted);

}  // namespace rill::server
