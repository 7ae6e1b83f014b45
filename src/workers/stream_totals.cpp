// StreamTotals: see the header and docs/workers.md ("Per-stream totals").
//
// A cell: lock (0, or the pid of the process adding), ticket (the life its values belong to; 0
// while a new life resets them), values. Tickets only grow in a cell: a writer resets it for a
// later life only, and a writer of an earlier life finds it Ended. Reset order (under the lock):
// ticket 0, release fence, values 0, ticket = the new life (release); a reader that sees the
// new ticket therefore sees the zeros or later additions, never an earlier life's values.
#include "rill/workers/stream_totals.h"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <new>
#include <system_error>

namespace rill::workers {

struct alignas(64) StreamTotals::Cell {
  std::atomic<uint64_t> lock{0};
  std::atomic<uint64_t> ticket{0};
  std::atomic<uint64_t> v[kFields] = {};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared memory needs address-free atomics");

namespace {

constexpr int kLockTries = 200;  // then Busy: the caller keeps its deltas for the next round

bool process_gone(uint64_t pid) {
  return pid == 0 || pid > INT32_MAX || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH);
}

bool take_lock(StreamTotals::Cell& c, pid_t self) {
  const auto me = static_cast<uint64_t>(self);
  for (int i = 0; i < kLockTries; ++i) {
    uint64_t held = 0;
    if (c.lock.compare_exchange_strong(held, me, std::memory_order_acquire)) return true;
    // Our own pid cannot hold it (one thread adds, and releases before returning): an earlier
    // process with the same pid died holding it. So did one that no longer exists.
    if ((held == me || process_gone(held)) &&
        c.lock.compare_exchange_strong(held, me, std::memory_order_acquire)) {
      return true;
    }
    if (i >= 8) ::sched_yield();
  }
  return false;
}

}  // namespace

StreamTotals::StreamTotals(int inherited_fd)
    : area_(std::make_unique<SharedArea>("rill-stream-totals", kCells * sizeof(Cell), inherited_fd)) {
  cells_ = static_cast<Cell*>(area_->data());
  if (!area_->adopted())
    for (size_t i = 0; i < kCells; ++i) new (&cells_[i]) Cell();
}

StreamTotals::~StreamTotals() = default;

int StreamTotals::shared_fd() const { return area_->fd(); }

StreamTotals::Added StreamTotals::add(Life life, const Values& delta, pid_t self) {
  if (life.index >= kCells || life.ticket == 0) return Added::Ended;
  Cell& c = cells_[life.index];
  if (!take_lock(c, self)) return Added::Busy;
  const uint64_t held = c.ticket.load(std::memory_order_relaxed);
  Added out = Added::Yes;
  if (held > life.ticket) {
    out = Added::Ended;
  } else {
    if (held < life.ticket) {  // an earlier life's values, or none yet: this life starts from zero
      c.ticket.store(0, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      for (auto& v : c.v) v.store(0, std::memory_order_relaxed);
      c.ticket.store(life.ticket, std::memory_order_release);
    }
    for (size_t f = 0; f < kFields; ++f) {
      if (delta[f]) c.v[f].fetch_add(delta[f], std::memory_order_relaxed);
    }
  }
  c.lock.store(0, std::memory_order_release);
  return out;
}

std::optional<StreamTotals::Values> StreamTotals::read(Life life) const {
  if (life.index >= kCells || life.ticket == 0) return std::nullopt;
  const Cell& c = cells_[life.index];
  for (int tries = 0; tries < 1000; ++tries) {
    const uint64_t before = c.ticket.load(std::memory_order_acquire);
    if (before > life.ticket) return std::nullopt;
    Values out{};
    if (before == life.ticket) {
      for (size_t f = 0; f < kFields; ++f) out[f] = c.v[f].load(std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    // Unchanged: the values are this life's (or, with an earlier ticket or a reset under way,
    // nothing was added to this life yet).
    if (c.ticket.load(std::memory_order_relaxed) == before) return out;
  }
  return std::nullopt;
}

size_t StreamTotals::unlock_all_of(pid_t pid) {
  if (pid <= 0) return 0;
  size_t n = 0;
  for (size_t i = 0; i < kCells; ++i) {
    uint64_t held = static_cast<uint64_t>(pid);
    if (cells_[i].lock.compare_exchange_strong(held, 0, std::memory_order_acq_rel)) ++n;
  }
  return n;
}

void StreamTotals::hold_lock_for_test(size_t index, pid_t pid) {
  if (index < kCells) cells_[index].lock.store(static_cast<uint64_t>(pid));
}

}  // namespace rill::workers
