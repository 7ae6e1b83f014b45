#pragma once
// The HLS responder: what an HLS request gets, decided in one place for every worker. The worker
// that serves a request from its own HlsStore (server/hls_handler.h) and the owner of a stream
// answering another worker over the worker link (workers/worker_link_session.h) both call it,
// so a client sees the same status, body and cache policy whichever worker its connection
// reached (docs/hls.md, "Workers").
//
// Input: the stream's HLS state in the store (null: none), the object asked for (playlist with
// its canonical LL-HLS delivery directives, segment, part or init section). Output: an answer
// (status, cache policy, Retry-After, the shared body or the reason) or a hold — a position the
// store must reach first (HlsStore::wait) and how long to wait for it; when the wait ends,
// respond_hls_held gives the answer. Pure: no socket, no HTTP, no clock (the wait's timer is
// the store's).
//
//   playlist, no state / no segment yet     404
//   playlist, not low-latency                200, max-age = target duration / 2 (no-cache < 2 s)
//   playlist, LL-HLS, no _HLS_msn            200, no-cache (_HLS_skip: the delta update)
//   playlist, _HLS_msn there already         200, max-age = target duration (the URL names it)
//   playlist, _HLS_msn not there yet         hold up to three target durations (§6.2.5.2), then
//                                            503 with Retry-After: 1
//   playlist, _HLS_msn > last + 2            400 (§6.2.5.2)
//   segment, part, init section              200, max-age = segment max-age, immutable; 404 when
//                                            not held; the preload-hinted part is held until
//                                            complete (404 if the publisher leaves first)
#include <cstdint>
#include <string>
#include <variant>

#include "rill/core/buffer.h"
#include "rill/media/hls_store.h"
#include "rill/media/stream_key.h"
#include "rill/protocol/hls_delivery.h"
#include "rill/protocol/worker_link_frame.h"

namespace rill::media {

struct HlsAnswer {
  protocol::HlsAnswerHead head;  // status, cache policy, Retry-After
  BufferRef body;                // 200: the object's bytes (the store's shared buffer, not copied)
  std::string reason;            // otherwise: why, for the client and the log
  bool ok() const { return head.status == 200; }
};

// Not there yet: wait until the store gets to `target`, at most `timeout_ms`.
struct HlsHold {
  HlsStore::WaitTarget target;
  int64_t timeout_ms = 0;
};

using HlsResponse = std::variant<HlsAnswer, HlsHold>;

// `st`: `key`'s state in this worker's store, or null. The object's directives are canonical
// (protocol::format_hls_delivery_directives); they apply to a low-latency stream only.
HlsResponse respond_hls(const HlsStreamState* st, const StreamKey& key,
                        const protocol::HlsObjectName& object);
// The answer to a held request once its wait is over: `reached` (the store got to the target),
// or not (timeout, the stream ended or was dropped). `st` is the state now (null: dropped).
HlsAnswer respond_hls_held(const HlsStreamState* st, const StreamKey& key,
                           const protocol::HlsObjectName& object, bool reached);

// The Content-Type of an HLS object (RFC 8216 §4: the playlist's; a segment's by its form).
const char* hls_object_content_type(const protocol::HlsObjectName& object);

}  // namespace rill::media
