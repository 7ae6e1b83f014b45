#include <chrono>

#include "rill/media/hls_store.h"
#include "rill/media/stream.h"

namespace rill::media {

StreamRegistry::StreamRegistry(TimerQueue& timers, std::shared_ptr<spdlog::logger> log, OutputFactory outputs)
    : timers_(timers),
      log_(std::move(log)),
      make_outputs_(std::move(outputs)),
      hls_(std::make_unique<HlsStore>(timers_, *log_)) {}

StreamRegistry::~StreamRegistry() = default;  // each Stream cancels its own timers

Stream* StreamRegistry::find(const StreamKey& key) {
  auto it = streams_.find(key);
  return it == streams_.end() ? nullptr : it->second.get();
}

Stream& StreamRegistry::get_or_create(const StreamKey& key, const config::AppConfig& cfg) {
  auto it = streams_.find(key);
  if (it == streams_.end()) {
    it = streams_.emplace(key, std::make_unique<Stream>(*this, key, cfg)).first;
    it->second->log().debug("stream created: {}", it->second->key_text());
  }
  return *it->second;
}

StreamOutputs StreamRegistry::build_outputs(Stream& s, PublishOrigin origin) {
  return make_outputs_ ? make_outputs_(s, s.app_config(), origin) : StreamOutputs{};
}

void StreamRegistry::release(Stream* s) {
  if (!s) return;
  if (s->dispatching_) {
    // Called from inside one of the stream's callback loops: the loop (and maybe its caller)
    // still uses the stream. Look again from the event loop.
    if (!s->release_timer_) {
      s->release_timer_ = timers_.schedule(std::chrono::milliseconds(0), [s] {
        s->release_timer_.reset();
        s->maybe_release();  // may destroy s
      });
    }
    return;
  }
  auto it = streams_.find(s->key());
  if (it == streams_.end() || it->second.get() != s) return;
  s->log().debug("stream released: {}", s->key_text());
  auto owned = std::move(it->second);
  streams_.erase(it);
  // owned goes out of scope here: ~Stream cancels its timers.
}

}  // namespace rill::media
