// OwnershipTable: see the header and docs/workers.md ("Ownership table").
//
// Entry life cycle (the state word: state 8 bits | version 24 bits | pid 32 bits):
//
//   Empty --CAS--> Writing --store--> Claiming --CAS--> Owned --CAS--> Free --CAS--> Writing ...
//                  (key, ticket        |                       (release,
//                   written)           +--CAS by a rival--> Lost --> Free   takeover, master)
//
// Empty entries were never used and end a probe sequence (linear probing); Free entries are
// reusable tombstones, so probes continue past them. Key, hash, slot and ticket are written only
// by the process that holds the entry in Writing; readers validate what they copied by reading
// the state word again (seqlock). Every field is a std::atomic (lock-free, address-free), so the
// table is well defined across processes.
#include "rill/workers/ownership_table.h"

#include <signal.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <system_error>

#include "rill/workers/hls_sequence_memo.h"
#include "rill/workers/stream_totals.h"

namespace rill::workers {

namespace {

constexpr size_t kKeyWords = OwnershipTable::kMaxKey / 8;
constexpr uint64_t kMagic = 0x52494c4c4f574e31ull;  // "RILLOWN1"

enum St : uint8_t { Empty = 0, Free = 1, Writing = 2, Claiming = 3, Owned = 4, Lost = 5 };

constexpr uint64_t make(St s, uint32_t ver, pid_t pid) {
  return (uint64_t(s) << 56) | (uint64_t(ver & 0xFFFFFFu) << 32) | uint64_t(static_cast<uint32_t>(pid));
}
constexpr St st(uint64_t w) { return static_cast<St>(w >> 56); }
constexpr uint32_t ver(uint64_t w) { return static_cast<uint32_t>(w >> 32) & 0xFFFFFFu; }
constexpr pid_t pid_of(uint64_t w) { return static_cast<pid_t>(static_cast<uint32_t>(w)); }
constexpr uint64_t next(uint64_t w, St s, pid_t pid) { return make(s, ver(w) + 1, pid); }

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// The key as zero-padded 64-bit words (what an entry stores).
struct KeyWords {
  uint64_t w[kKeyWords] = {};
  size_t words = 0;
  explicit KeyWords(std::string_view k) {
    std::memcpy(w, k.data(), k.size());
    words = (k.size() + 7) / 8;
  }
};

}  // namespace

struct OwnershipTable::Header {
  std::atomic<uint64_t> magic{0};
  std::atomic<uint64_t> next_ticket{0};
};

struct alignas(64) OwnershipTable::Entry {
  std::atomic<uint64_t> state{0};
  std::atomic<uint64_t> ticket{0};
  std::atomic<uint32_t> hash{0};
  std::atomic<int32_t> slot{-1};
  std::atomic<uint32_t> key_len{0};
  std::atomic<uint64_t> key[kKeyWords] = {};
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "the table needs lock-free 64-bit atomics");
static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(StreamTotals::kCells == OwnershipTable::kCapacity, "one stream-totals cell per entry");

namespace {

// A validated copy of what an entry says about `key`.
struct Snap {
  uint64_t word = 0;
  bool matches = false;  // Claiming/Owned/Lost entry for this key
  int slot = -1;
  uint64_t ticket = 0;
};

Snap read_entry(const OwnershipTable::Entry& e, const KeyWords& key, size_t key_len, uint32_t hash) {
  for (int tries = 0;; ++tries) {
    Snap s;
    // seq_cst: the claimer's rival scan must not be reordered before its own Claiming store.
    s.word = e.state.load(std::memory_order_seq_cst);
    const St state = st(s.word);
    if (state != Claiming && state != Owned && state != Lost) return s;  // no stable content
    bool match = e.hash.load(std::memory_order_relaxed) == hash &&
                 e.key_len.load(std::memory_order_relaxed) == key_len;
    for (size_t i = 0; match && i < key.words; ++i) match = e.key[i].load(std::memory_order_relaxed) == key.w[i];
    s.slot = e.slot.load(std::memory_order_relaxed);
    s.ticket = e.ticket.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.state.load(std::memory_order_relaxed) == s.word) {
      s.matches = match;
      return s;
    }
    if (tries > 1000) {  // changing under us all the time: report it as not ours to judge
      s.word = e.state.load(std::memory_order_acquire);
      s.matches = false;
      return s;
    }
  }
}

// Entry word -> Free (version bumped), if it still is `expected`.
bool free_if(OwnershipTable::Entry& e, uint64_t expected) {
  return e.state.compare_exchange_strong(expected, next(expected, Free, 0), std::memory_order_acq_rel);
}

// Our own entry -> Free, whatever a rival did to it meanwhile (marked it Lost).
void free_own(OwnershipTable::Entry& e) {
  uint64_t w = e.state.load(std::memory_order_acquire);
  while (!e.state.compare_exchange_weak(w, next(w, Free, 0), std::memory_order_acq_rel)) {
  }
}

// Step 3 of claim(): looks for rivals of the same key along the whole probe sequence from
// `start`, after our own entry `cand` went Claiming with `ticket`. The seq_cst store of Claiming
// and the loads here mean that of two concurrent claimers at least one sees the other (Dekker).
// True when we must back off: an owner exists, or a live rival has an earlier ticket, or a rival
// could not be settled with (never two owners).
bool loses_to_a_rival(OwnershipTable::Entry* entries, size_t start, size_t cand, const KeyWords& kw, size_t key_len,
                      uint32_t hash, uint64_t ticket) {
  for (size_t i = 0; i < OwnershipTable::kCapacity; ++i) {
    const size_t idx = (start + i) % OwnershipTable::kCapacity;
    if (idx == cand) continue;
    OwnershipTable::Entry& e = entries[idx];
    bool resolved = false;
    for (int again = 0; again < 8 && !resolved; ++again) {
      const Snap s = read_entry(e, kw, key_len, hash);
      const St state = st(s.word);
      resolved = true;
      if (state == Empty) return false;  // end of the probe sequence
      if (!s.matches || (state != Owned && state != Claiming)) continue;  // nothing that competes
      if (OwnershipTable::process_gone(pid_of(s.word))) {
        free_if(e, s.word);
      } else if (state == Owned || s.ticket < ticket) {
        return true;
      } else {
        // A later claimer: it loses. If the CAS fails the entry changed: look at it again.
        uint64_t w = s.word;
        resolved = e.state.compare_exchange_strong(w, next(w, Lost, pid_of(w)), std::memory_order_seq_cst);
      }
    }
    if (!resolved) return true;
  }
  return false;
}

}  // namespace

OwnershipTable::OwnershipTable() : OwnershipTable(SharedFds{}) {}

OwnershipTable::OwnershipTable(const SharedFds& inherited)
    : area_(std::make_unique<SharedArea>("rill-ownership", sizeof(Header) + 64 + kCapacity * sizeof(Entry),
                                         inherited.table)) {
  static_assert(sizeof(Header) <= 64);
  auto* base = static_cast<unsigned char*>(area_->data()) + 64;  // entries start on a cache line
  entries_ = reinterpret_cast<Entry*>(base);
  if (area_->adopted()) {
    header_ = static_cast<Header*>(area_->data());
    if (header_->magic.load(std::memory_order_acquire) != kMagic)
      throw std::runtime_error("the inherited stream ownership table is not of this build's layout");
  } else {
    header_ = new (area_->data()) Header();
    for (size_t i = 0; i < kCapacity; ++i) new (&entries_[i]) Entry();
    header_->magic.store(kMagic, std::memory_order_release);
  }
  hls_memo_ = std::make_unique<HlsSequenceMemo>(inherited.hls_memo);
  stream_totals_ = std::make_unique<StreamTotals>(inherited.stream_totals);
}

OwnershipTable::~OwnershipTable() = default;

OwnershipTable::SharedFds OwnershipTable::shared_fds() const {
  return SharedFds{area_->fd(), hls_memo_->shared_fd(), stream_totals_->shared_fd()};
}

bool OwnershipTable::process_gone(pid_t pid) {
  if (pid <= 0) return true;
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

OwnershipTable::Claim OwnershipTable::claim(std::string_view key, int slot, pid_t pid) {
  if (key.empty() || key.size() > kMaxKey) return Claim::TooLong;
  const uint64_t h64 = fnv1a(key);
  const uint32_t hash = static_cast<uint32_t>(h64 >> 32);
  const size_t start = h64 % kCapacity;
  const KeyWords kw(key);

  for (int attempt = 0; attempt < 64; ++attempt) {
    // 1. Is it owned already? Where would a new entry go (first Free or Empty)?
    size_t cand = kCapacity;
    uint64_t cand_word = 0;
    bool busy = false;
    for (size_t i = 0; i < kCapacity; ++i) {
      const size_t idx = (start + i) % kCapacity;
      Entry& e = entries_[idx];
      const Snap s = read_entry(e, kw, key.size(), hash);
      const St state = st(s.word);
      if (state == Empty || state == Free) {
        if (cand == kCapacity) {
          cand = idx;
          cand_word = s.word;
        }
        if (state == Empty) break;
        continue;
      }
      if (!s.matches || (state != Owned && state != Claiming)) continue;
      if (pid_of(s.word) == pid) {
        if (state == Owned) return Claim::AlreadyOurs;
        continue;
      }
      if (process_gone(pid_of(s.word))) {  // its owner died: take it over
        free_if(e, s.word);
        continue;
      }
      if (state == Owned) {
        busy = true;
        break;
      }
      // Claiming by a live rival: the ticket decides below.
    }
    if (busy) return Claim::Busy;
    if (cand == kCapacity) return Claim::Full;

    // 2. Take the candidate entry and write the key.
    Entry& mine = entries_[cand];
    uint64_t expected = cand_word;
    if (!mine.state.compare_exchange_strong(expected, next(cand_word, Writing, pid), std::memory_order_acq_rel))
      continue;  // somebody else took it: look again
    std::atomic_thread_fence(std::memory_order_release);  // seqlock: the content follows the state
    const uint64_t ticket = header_->next_ticket.fetch_add(1, std::memory_order_relaxed) + 1;
    mine.hash.store(hash, std::memory_order_relaxed);
    mine.slot.store(slot, std::memory_order_relaxed);
    mine.ticket.store(ticket, std::memory_order_relaxed);
    mine.key_len.store(static_cast<uint32_t>(key.size()), std::memory_order_relaxed);
    for (size_t i = 0; i < kKeyWords; ++i) mine.key[i].store(i < kw.words ? kw.w[i] : 0, std::memory_order_relaxed);
    const uint64_t claiming = make(Claiming, ver(cand_word) + 2, pid);
    mine.state.store(claiming, std::memory_order_seq_cst);

    // 3. Look for rivals of the same key along the whole probe sequence.
    const bool lose = loses_to_a_rival(entries_, start, cand, kw, key.size(), hash, ticket);
    if (!lose) {
      uint64_t w = claiming;
      if (mine.state.compare_exchange_strong(w, next(claiming, Owned, pid), std::memory_order_seq_cst))
        return Claim::Claimed;
    }
    free_own(mine);  // lost the race (or a rival with an earlier ticket marked us Lost)
    return Claim::Busy;
  }
  return Claim::Busy;  // the table kept changing under us; the publisher may retry
}

bool OwnershipTable::release(std::string_view key, pid_t pid) {
  if (key.empty() || key.size() > kMaxKey) return false;
  const uint64_t h64 = fnv1a(key);
  const uint32_t hash = static_cast<uint32_t>(h64 >> 32);
  const size_t start = h64 % kCapacity;
  const KeyWords kw(key);
  bool released = false;
  for (size_t i = 0; i < kCapacity; ++i) {
    Entry& e = entries_[(start + i) % kCapacity];
    const Snap s = read_entry(e, kw, key.size(), hash);
    if (st(s.word) == Empty) break;
    if (s.matches && st(s.word) == Owned && pid_of(s.word) == pid) released = free_if(e, s.word) || released;
  }
  return released;
}

std::optional<OwnershipTable::Owner> OwnershipTable::lookup(std::string_view key) const {
  if (key.empty() || key.size() > kMaxKey) return std::nullopt;
  const uint64_t h64 = fnv1a(key);
  const uint32_t hash = static_cast<uint32_t>(h64 >> 32);
  const size_t start = h64 % kCapacity;
  const KeyWords kw(key);
  for (size_t i = 0; i < kCapacity; ++i) {
    const Entry& e = entries_[(start + i) % kCapacity];
    const Snap s = read_entry(e, kw, key.size(), hash);
    if (st(s.word) == Empty) break;
    if (s.matches && st(s.word) == Owned) {
      return Owner{s.slot, pid_of(s.word), ver(s.word), (start + i) % kCapacity, s.ticket};
    }
  }
  return std::nullopt;
}

size_t OwnershipTable::release_all_of(pid_t pid) {
  if (pid <= 0) return 0;
  size_t n = 0;
  for (size_t i = 0; i < kCapacity; ++i) {
    Entry& e = entries_[i];
    uint64_t w = e.state.load(std::memory_order_acquire);
    while (st(w) != Empty && st(w) != Free && pid_of(w) == pid) {
      if (e.state.compare_exchange_weak(w, next(w, Free, 0), std::memory_order_acq_rel)) {
        ++n;
        break;
      }
    }
  }
  stream_totals_->unlock_all_of(pid);  // a worker killed while adding to a cell
  return n;
}

size_t OwnershipTable::owned_count() const {
  size_t n = 0;
  for (size_t i = 0; i < kCapacity; ++i) {
    if (st(entries_[i].state.load(std::memory_order_acquire)) == Owned) ++n;
  }
  return n;
}

const char* to_string(OwnershipTable::Claim c) {
  switch (c) {
    case OwnershipTable::Claim::Claimed: return "claimed";
    case OwnershipTable::Claim::AlreadyOurs: return "already ours";
    case OwnershipTable::Claim::Busy: return "owned by another worker";
    case OwnershipTable::Claim::TooLong: return "key too long";
    case OwnershipTable::Claim::Full: return "ownership table full";
  }
  return "?";
}

}  // namespace rill::workers
