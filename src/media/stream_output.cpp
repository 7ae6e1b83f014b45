#include "rill/media/stream_output.h"

#include "rill/media/hls_segmenter.h"
#include "rill/media/recorder.h"
#include "rill/media/stream.h"

namespace rill::media {

std::string_view to_string(PublishOrigin o) {
  switch (o) {
    case PublishOrigin::Ingest: return "ingest";
    case PublishOrigin::WorkerLink: return "worker link";
    case PublishOrigin::EdgePull: return "edge pull";
    case PublishOrigin::Pull: return "pull";
  }
  return "?";
}

StreamOutputs default_outputs(Stream& stream, const config::AppConfig& app, PublishOrigin origin) {
  StreamOutputs out;
  // A worker-link copy repeats what the owning worker's outputs already produce.
  if (origin == PublishOrigin::WorkerLink) return out;
  StreamRegistry& r = stream.registry();
  if (app.hls.enabled) out.push_back(std::make_unique<HlsSegmenter>(r.hls(), stream.key(), app.hls, r.log()));
  if (app.record.enabled() && r.record_writer()) {
    out.push_back(std::make_unique<Recorder>(*r.record_writer(), stream.key(), app.record, r.log()));
  }
  return out;
}

}  // namespace rill::media
