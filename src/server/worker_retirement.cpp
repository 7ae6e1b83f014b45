#include "rill/server/worker_retirement.h"

#include <vector>

#include "rill/media/stream_key.h"

namespace rill::server {

namespace {
constexpr std::chrono::milliseconds kCheckInterval{250};
}

WorkerRetirement::WorkerRetirement(net::WorkerCore& ctx, std::chrono::milliseconds idle_limit,
                                   std::function<void()> on_done)
    : ctx_(ctx), idle_limit_(idle_limit), on_done_(std::move(on_done)) {}

WorkerRetirement::~WorkerRetirement() {
  if (timer_) ctx_.timers->cancel(*timer_);
}

void WorkerRetirement::start() {
  timer_ = ctx_.timers->schedule(kCheckInterval, [this] { check(); });
}

bool WorkerRetirement::carries_media(const net::SessionInfo& info) const {
  switch (info.kind) {
    case net::SessionKind::Publisher:
    case net::SessionKind::Download:  // ends by itself: sent, or its send timeout
      return true;
    case net::SessionKind::WorkerLink:
      return !info.stream.empty();  // a sender; queries are short
    case net::SessionKind::Player: {
      auto key = media::StreamKey::parse(info.stream);
      media::Stream* s = key ? ctx_.streams->find(*key) : nullptr;
      return s && s->has_publisher();
    }
    default:
      return false;
  }
}

void WorkerRetirement::check() {
  timer_.reset();
  if (ctx_.sessions->size() == 0) {
    if (auto done = std::exchange(on_done_, nullptr)) done();
    return;
  }
  const int64_t now = ctx_.timers->now_ms();
  std::unordered_map<uint64_t, int64_t> seen;
  std::vector<net::Session*> expired;
  size_t live = 0;
  ctx_.sessions->for_each([&](net::Session& s) {
    const net::SessionInfo info = s.describe();
    if (carries_media(info)) {
      ++live;
      return;
    }
    auto it = idle_since_.find(info.id);
    const int64_t since = it == idle_since_.end() ? now : it->second;
    seen.emplace(info.id, since);
    if (now - since >= idle_limit_.count()) expired.push_back(&s);
  });
  idle_since_ = std::move(seen);
  live_ = live;
  for (auto* s : expired) s->close("idle after a reload (shutdown_timeout)");
  timer_ = ctx_.timers->schedule(kCheckInterval, [this] { check(); });
}

}  // namespace rill::server
