#pragma once
// What the control plane shows of a stream's recording (docs/recording.md, docs/api.md): the
// stream's Recorder found among its outputs, and its state as JSON,
//   {"state": off|waiting|recording|failed|stopped, "file", "bytes", "started", "reason"}
// ("off": the stream has no recorder here — its app does not record, or this worker's copy is a
// worker link's). Read on the worker's thread.
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "rill/media/recorder.h"
#include "rill/media/stream.h"

namespace rill::workers {

// The stream's recorder, while a publisher is attached and its app records; else null.
media::Recorder* recorder_of(const media::Stream& s);
std::string_view record_state_name(media::Recorder::State state);
nlohmann::json record_json(const media::Stream& s);
// "2026-12-04T22:30:00Z"; "" for 0.
std::string rfc3339_utc(std::time_t t);

}  // namespace rill::workers
