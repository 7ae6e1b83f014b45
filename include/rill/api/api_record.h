#pragma once
// POST /api/v1/streams/{app}/{name}/record {"action": "start"|"stop"} (docs/api.md): nginx-rtmp's
// `control record start|stop`, routed to the worker that records the stream (its owner).
#include "rill/media/stream_key.h"

namespace rill::http {
class HttpExchange;
}

namespace rill::api {

class ApiServer;

// Answers the exchange (an authorized POST whose path named `key`).
void post_record(ApiServer& api, http::HttpExchange& ex, const media::StreamKey& key);

}  // namespace rill::api
