#pragma once
// The HlsStore's RecordedReader (media/hls_store.h, hls.rewind): a segment of the rewind history
// read back from its recording file on the worker's BlockingWorkThread (never on the event loop),
// its bytes handed to the store on the loop.
#include "rill/media/hls_store.h"

namespace rill::net {
class BlockingWorkThread;
}

namespace rill::server {

// `work` outlives every read it queues (its destructor drops the continuations not yet run).
media::HlsStore::RecordedReader recorded_segment_reader(net::BlockingWorkThread& work);

}  // namespace rill::server
