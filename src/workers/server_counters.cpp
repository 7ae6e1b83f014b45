#include "rill/workers/server_counters.h"

#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace rill::workers {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "counters are shared between processes");

ServerCounters::ServerCounters(int inherited_fd)
    : shared_(std::make_unique<SharedArea>("rill-server-counters", sizeof(Area), inherited_fd)) {
  if (shared_->adopted()) {
    area_ = static_cast<Area*>(shared_->data());  // alive in the previous master's generations
    return;
  }
  area_ = new (shared_->data()) Area();  // the mapping is zeroed; this only starts the atomics' lifetimes
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  area_->started_unix_ms.store(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
}

ServerCounters::~ServerCounters() = default;

int ServerCounters::shared_fd() const { return shared_->fd(); }

void ServerCounters::add(uint32_t slot, Counter c, uint64_t delta) {
  if (slot >= kCounterSlots || delta == 0) return;
  area_->rows[slot].v[static_cast<size_t>(c)].fetch_add(delta, std::memory_order_relaxed);
}

uint64_t ServerCounters::get(uint32_t slot, Counter c) const {
  if (slot >= kCounterSlots) return 0;
  return area_->rows[slot].v[static_cast<size_t>(c)].load(std::memory_order_relaxed);
}

int64_t ServerCounters::started_unix_ms() const { return area_->started_unix_ms.load(); }

uint64_t CounterPublisher::publish(Counter c, uint64_t own_total) {
  uint64_t& done = published_[static_cast<size_t>(c)];
  const uint64_t delta = own_total > done ? own_total - done : 0;
  done += delta;
  if (!shared_) return done;
  shared_->add(slot_, c, delta);
  return shared_->get(slot_, c);
}

}  // namespace rill::workers
