#include <unistd.h>

#include "rill/net/worker_core.h"

namespace rill::net {

const char* session_protocol_name(SessionProtocol p) {
  switch (p) {
    case SessionProtocol::Other:
      return "other";
    case SessionProtocol::Rtmp:
      return "rtmp";
    case SessionProtocol::HttpFlv:
      return "http-flv";
    case SessionProtocol::WorkerLink:
      return "worker-link";
    case SessionProtocol::Download:
      return "download";
  }
  return "?";
}

const char* session_kind_name(SessionKind k) {
  switch (k) {
    case SessionKind::Other:
      return "other";
    case SessionKind::Connecting:
      return "connecting";
    case SessionKind::Publisher:
      return "publisher";
    case SessionKind::Player:
      return "player";
    case SessionKind::WorkerLink:
      return "worker-link";
    case SessionKind::Download:
      return "download";
  }
  return "?";
}

SessionInfo Session::describe() const {
  SessionInfo i;
  i.id = id_;
  i.protocol = session_protocol_name(protocol_);
  return i;
}

SessionSet::~SessionSet() {
  reap();
  for (auto* s : live_set_) delete s;
}

SessionSet::SessionSet(EventTimerQueue& timers)
    : timers_(timers), id_pid_(static_cast<uint64_t>(::getpid()) << 32) {}

uint64_t SessionSet::next_id() { return id_pid_ | ++id_seq_; }

Session* SessionSet::add(std::unique_ptr<Session> s) {
  Session* p = s.release();
  if (p->id() == 0) p->set_id(next_id());
  if (live_set_.insert(p).second) {
    ++counts_[static_cast<size_t>(p->protocol())];
    ++added_[static_cast<size_t>(p->protocol())];
  }
  return p;
}

Session* SessionSet::find(uint64_t id) const {
  for (auto* s : live_set_) {
    if (s->id() == id) return s;
  }
  return nullptr;
}

void SessionSet::retire(Session* s) {
  if (live_set_.erase(s) == 0) return;  // already retired
  for (auto& observe : retire_observers_) observe(*s);
  --counts_[static_cast<size_t>(s->protocol())];
  if (on_retired_) on_retired_(s->describe());
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
  for (auto* s : copy)
    if (live_set_.count(s)) s->close(reason);
}

void SessionSet::drain_all() {
  std::vector<Session*> copy(live_set_.begin(), live_set_.end());
  for (auto* s : copy)
    if (live_set_.count(s)) s->drain();
}

}  // namespace rill::net
