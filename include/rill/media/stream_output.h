#pragma once
// StreamOutput: what a stream produces from its publisher's media while a publisher is attached —
// the HLS segmenter today; forward pushes, DVR and LL-HLS are meant to be outputs too. (SRS's
// SrsOriginHub idea: the stream keeps a list, not one field per feature.)
//
// A stream builds its outputs when a publisher attaches, by asking the OutputFactory its registry
// was given with the app's configuration and the publisher's origin; it starts them, hands them
// every frame, stops them when the publisher leaves and destroys them. A republish builds a new
// list. Players are not outputs: they are Subscribers (subscriber.h), which come and go on their
// own and outlive publishers.
//
// media/: no socket, no clock. One worker thread.
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "rill/config/config.h"
#include "rill/media/media_frame.h"

namespace rill::media {

class Stream;

// What kind of publisher feeds a stream; the factory decides from it which outputs to build.
enum class PublishOrigin : uint8_t {
  Ingest,      // a client publishing to this worker (RTMP): the stream is this worker's own
  WorkerLink,  // a copy of a stream another worker of this server owns (its outputs run there)
  // Pulled from another server (cluster): unlike WorkerLink it is this server's only copy, so it
  // gets local outputs (HLS) like Ingest; an edge's forward push never sends it back.
  EdgePull,    // an edge's on-demand pull of its origin
  Pull,        // a static pull (apps.X.pull)
};
std::string_view to_string(PublishOrigin o);

// The publisher an output starts or stops with.
struct PublishSession {
  const Stream& stream;  // key(), app_config(), info() (tracks seen, frames and bytes in)
  PublishOrigin origin;
};

class StreamOutput {
 public:
  virtual ~StreamOutput() = default;
  // For logs: "hls", "forward rtmp://host/app", "dvr".
  virtual std::string_view name() const = 0;
  // The publisher attached; called once, before its first frame.
  virtual void on_start(const PublishSession&) {}
  // Every frame the stream accepted from the publisher, in publish order, on the stream's output
  // timeline: metadata (already stripped of @setDataFrame) and sequence headers included,
  // malformed messages excluded. Called before the stream's subscribers get the frame. An output
  // must not call back into the stream (publish, detach_publisher) from here.
  virtual void on_frame(const FramePtr& frame) = 0;
  // A multitrack publish (E-RTMP v2): a frame of a track other than 0, re-framed as a
  // single-track tag (FrameView::Reframed). on_frame gets track 0 only; an output that makes
  // something of the other tracks (HLS renditions) takes them here. Same rules as on_frame.
  virtual void on_track_frame(const FramePtr& /*frame*/) {}
  // The publisher left (or the stream is being destroyed with it): finish what is in progress
  // (the last segment, the playlist's end). Called once after on_start; the output is destroyed
  // right after, without another frame.
  virtual void on_stop(const PublishSession&) {}
};

using StreamOutputs = std::vector<std::unique_ptr<StreamOutput>>;

// Builds the outputs of a stream for a publisher that attaches (in the order they get frames).
// Held by the StreamRegistry; a factory may add outputs of other modules to default_outputs().
using OutputFactory =
    std::function<StreamOutputs(Stream& stream, const config::AppConfig& app, PublishOrigin origin)>;

// The outputs media/ itself provides: HLS (HlsSegmenter into the registry's HlsStore) when
// app.hls.enabled, and the Recorder (into the registry's record writer) when app.record is on,
// for every origin but WorkerLink (both are produced once, by the owning worker).
StreamOutputs default_outputs(Stream& stream, const config::AppConfig& app, PublishOrigin origin);

}  // namespace rill::media
