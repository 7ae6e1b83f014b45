#pragma once
// One HLS request as the handlers pass it on, resolved once: the stream (the gate's answer: a
// callback may have renamed it), its app (looked up once, by the gate) and the object asked for.
#include "rill/config/config.h"
#include "rill/media/stream_key.h"
#include "rill/protocol/worker_link_frame.h"

namespace rill::server {

struct HlsRequest {
  media::StreamKey key;
  const config::AppConfig* app = nullptr;  // null: the configuration has no such app
  protocol::HlsObjectName object;
};

}  // namespace rill::server
