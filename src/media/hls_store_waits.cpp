// HlsStore's held requests: LL-HLS blocking playlist reloads (RFC 8216bis §6.2.5.2) and requests
// for the preload-hinted part (§4.4.5.3), parked here (a callback and a timer each, no thread,
// no polling) and answered when the segmenter's add_part / add_segment gets the stream there.
#include <algorithm>
#include <chrono>
#include <vector>

#include "rill/media/hls_store.h"

namespace rill::media {

bool HlsStore::satisfied(const HlsStreamState& st, const WaitTarget& t) const {
  if (t.recorded) return std::find(st.reading_.begin(), st.reading_.end(), t.msn) == st.reading_.end();
  if (t.part_file) return t.msn < st.next_part_;
  return protocol::hls_block_verdict(st.progress(), t.msn, t.part) == protocol::HlsBlockVerdict::Ready;
}

uint64_t HlsStore::wait(const StreamKey& key, WaitTarget target, int64_t timeout_ms,
                        std::function<void(bool)> done) {
  const uint64_t id = next_wait_++;
  Wait w{key, target, {}, std::move(done)};
  w.timer = timers_.schedule(std::chrono::milliseconds(timeout_ms), [this, id] {
    auto it = waits_.find(id);
    if (it == waits_.end()) return;
    auto cb = std::move(it->second.done);
    waits_.erase(it);
    cb(false);
  });
  waits_.emplace(id, std::move(w));
  if (target.recorded) read_recorded(key, target.msn);
  return id;
}

void HlsStore::cancel_wait(uint64_t id) {
  auto it = waits_.find(id);
  if (it == waits_.end()) return;
  timers_.cancel(it->second.timer);
  waits_.erase(it);
}

void HlsStore::wake(const StreamKey& key, bool gone) {
  if (waits_.empty()) return;
  const HlsStreamState* st = gone ? nullptr : find(key);
  // Collected first: a callback may start or cancel other waits.
  std::vector<std::pair<std::function<void(bool)>, bool>> ready;
  for (auto it = waits_.begin(); it != waits_.end();) {
    Wait& w = it->second;
    bool answer = false, ok = false;
    if (w.key == key) {
      if (!st)
        answer = true;  // dropped: nothing will come
      else if (satisfied(*st, w.target))
        answer = ok = true;
      else if (w.target.part_file && st->playlist().ended())
        answer = true;  // the hinted part will not come
    }
    if (!answer) {
      ++it;
      continue;
    }
    timers_.cancel(w.timer);
    ready.emplace_back(std::move(w.done), ok);
    it = waits_.erase(it);
  }
  for (auto& [cb, ok] : ready) cb(ok);
}

}  // namespace rill::media
