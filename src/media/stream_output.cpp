#include "rill/media/stream_output.h"

#include "rill/media/hls_segmenter.h"
#include "rill/media/recorder.h"
#include "rill/media/rewind_link.h"
#include "rill/media/stream.h"

namespace rill::media {

std::string_view to_string(PublishOrigin o) {
  switch (o) {
    case PublishOrigin::Ingest:
      return "ingest";
    case PublishOrigin::WorkerLink:
      return "worker link";
    case PublishOrigin::EdgePull:
      return "edge pull";
    case PublishOrigin::Pull:
      return "pull";
  }
  return "?";
}

StreamOutputs default_outputs(Stream& stream, const config::AppConfig& app, PublishOrigin origin) {
  StreamOutputs out;
  // A worker-link copy repeats what the owning worker's outputs already produce.
  if (origin == PublishOrigin::WorkerLink) return out;
  StreamRegistry& r = stream.registry();
  HlsSegmenter* hls = nullptr;
  if (app.hls.enabled) {
    auto seg = std::make_unique<HlsSegmenter>(r.hls(), stream.key(), app.hls, r.log());
    hls = seg.get();
    out.push_back(std::move(seg));
  }
  if (app.record.enabled() && r.record_writer()) {
    auto rec = std::make_unique<Recorder>(*r.record_writer(), stream.key(), app.record, r.log());
    // hls.rewind: the recorder follows the segmenter, which comes first among the outputs (it
    // sees each frame before the recorder does: media/rewind_link.h).
    if (hls && app.hls.rewind.count() > 0 && app.record.format == config::RecordFormat::Fmp4) {
      auto link = std::make_shared<RewindLink>(r.hls(), stream.key());
      hls->set_rewind(link);
      rec->follow_segments(std::move(link));
    }
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace rill::media
