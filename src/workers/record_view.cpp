#include "rill/workers/record_view.h"

namespace rill::workers {

media::Recorder* recorder_of(const media::Stream& s) {
  for (const auto& out : s.outputs()) {
    if (auto* r = dynamic_cast<media::Recorder*>(out.get())) return r;
  }
  return nullptr;
}

std::string_view record_state_name(media::Recorder::State state) {
  switch (state) {
    case media::Recorder::State::Waiting:
      return "waiting";
    case media::Recorder::State::Recording:
      return "recording";
    case media::Recorder::State::Failed:
      return "failed";
    case media::Recorder::State::Stopped:
      return "stopped";
  }
  return "?";
}

nlohmann::json record_json(const media::Stream& s) {
  const media::Recorder* r = recorder_of(s);
  if (!r) return {{"state", "off"}, {"file", nullptr}, {"bytes", 0}, {"started", nullptr}, {"reason", ""}};
  const media::Recorder::Status st = r->status();
  const bool open = !st.path.empty();
  return {{"state", record_state_name(st.state)},
          {"file", open ? nlohmann::json(st.path) : nlohmann::json()},
          {"bytes", st.bytes},
          {"started", open ? nlohmann::json(rfc3339_utc(st.started)) : nlohmann::json()},
          {"reason", st.reason}};
}

std::string rfc3339_utc(std::time_t t) {
  if (t == 0) return {};
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

}  // namespace rill::workers
