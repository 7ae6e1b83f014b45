#include "rill/net/server_context.h"

namespace rill::net {

SessionSet::~SessionSet() {
  reap();
  for (auto* s : live_set_) delete s;
}

Session* SessionSet::add(std::unique_ptr<Session> s) {
  Session* p = s.release();
  live_set_.insert(p);
  return p;
}

void SessionSet::retire(Session* s) {
  if (live_set_.erase(s) == 0) return;  // already retired
  retired_.push_back(s);
  if (!reap_scheduled_) {
    reap_scheduled_ = true;
    timers_.schedule(std::chrono::milliseconds(0), [this] { reap(); });
  }
}

void SessionSet::reap() {
  reap_scheduled_ = false;
  auto batch = std::move(retired_);
  retired_.clear();
  for (auto* s : batch) delete s;
}

void SessionSet::close_all(const char* reason) {
  std::vector<Session*> copy(live_set_.begin(), live_set_.end());
  for (auto* s : copy) if (live_set_.count(s)) s->close(reason);
}

void SessionSet::drain_all() {
  std::vector<Session*> copy(live_set_.begin(), live_set_.end());
  for (auto* s : copy) if (live_set_.count(s)) s->drain();
}

}  // namespace rill::net
