// OwnershipTable: the cross-process stream ownership table (workers/ownership_table.h).
#include <gtest/gtest.h>

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "rill/workers/ownership_table.h"

namespace rill::workers {
namespace {

using Claim = OwnershipTable::Claim;

// A process that is alive for the whole test and is not us: our parent.
pid_t other_live_pid() { return ::getppid(); }

TEST(OwnershipTable, ClaimLookupRelease) {
  OwnershipTable t;
  const pid_t me = ::getpid();
  EXPECT_FALSE(t.lookup("live/cam"));
  EXPECT_EQ(t.claim("live/cam", 3, me), Claim::Claimed);
  auto o = t.lookup("live/cam");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->slot, 3);
  EXPECT_EQ(o->pid, me);
  EXPECT_EQ(t.claim("live/cam", 3, me), Claim::AlreadyOurs);
  EXPECT_FALSE(t.lookup("live/cam2"));
  EXPECT_FALSE(t.lookup("live/ca"));
  EXPECT_EQ(t.owned_count(), 1u);

  EXPECT_FALSE(t.release("live/cam", other_live_pid()));  // not the owner
  EXPECT_TRUE(t.lookup("live/cam"));
  EXPECT_TRUE(t.release("live/cam", me));
  EXPECT_FALSE(t.lookup("live/cam"));
  EXPECT_FALSE(t.release("live/cam", me));
  EXPECT_EQ(t.owned_count(), 0u);
  // Released entries are reused; versions move on.
  EXPECT_EQ(t.claim("live/cam", 1, me), Claim::Claimed);
  auto again = t.lookup("live/cam");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->slot, 1);
  EXPECT_NE(again->version, o->version);
}

TEST(OwnershipTable, SecondClaimerIsRefused) {
  OwnershipTable t;
  EXPECT_EQ(t.claim("live/a", 0, ::getpid()), Claim::Claimed);
  EXPECT_EQ(t.claim("live/a", 1, other_live_pid()), Claim::Busy);
  auto o = t.lookup("live/a");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->slot, 0);
  // Another key is independent.
  EXPECT_EQ(t.claim("live/b", 1, other_live_pid()), Claim::Claimed);
  EXPECT_EQ(t.lookup("live/b")->slot, 1);
}

TEST(OwnershipTable, ReleaseAllOf) {
  OwnershipTable t;
  const pid_t me = ::getpid(), other = other_live_pid();
  for (int i = 0; i < 5; ++i) ASSERT_EQ(t.claim("live/s" + std::to_string(i), 0, me), Claim::Claimed);
  ASSERT_EQ(t.claim("live/theirs", 1, other), Claim::Claimed);
  EXPECT_EQ(t.release_all_of(me), 5u);
  EXPECT_EQ(t.release_all_of(me), 0u);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(t.lookup("live/s" + std::to_string(i)));
  EXPECT_TRUE(t.lookup("live/theirs"));
  EXPECT_EQ(t.claim("live/s0", 1, other), Claim::Claimed);
}

TEST(OwnershipTable, DeadOwnerIsTakenOver) {
  OwnershipTable t;
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The mapping is shared: the claim is visible to the parent.
    _exit(t.claim("live/orphan", 7, ::getpid()) == Claim::Claimed ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto o = t.lookup("live/orphan");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->pid, child);
  EXPECT_TRUE(OwnershipTable::process_gone(child));
  // Nobody released it (no master here), but its owner is dead: a new claimer takes it over.
  EXPECT_EQ(t.claim("live/orphan", 2, ::getpid()), Claim::Claimed);
  EXPECT_EQ(t.lookup("live/orphan")->slot, 2);
}

TEST(OwnershipTable, KeyBounds) {
  OwnershipTable t;
  const std::string longest = "live/" + std::string(OwnershipTable::kMaxKey - 5, 'x');
  EXPECT_EQ(t.claim(longest, 0, ::getpid()), Claim::Claimed);
  EXPECT_TRUE(t.lookup(longest));
  EXPECT_EQ(t.claim(longest + "y", 0, ::getpid()), Claim::TooLong);
  EXPECT_EQ(t.claim("", 0, ::getpid()), Claim::TooLong);
  EXPECT_FALSE(t.lookup(longest + "y"));
  EXPECT_FALSE(t.release(longest + "y", ::getpid()));
  // Keys that share a prefix (same leading words) are distinct.
  EXPECT_EQ(t.claim(longest.substr(0, longest.size() - 1), 0, ::getpid()), Claim::Claimed);
}

TEST(OwnershipTable, FillsUpAndReusesReleasedEntries) {
  OwnershipTable t;
  const pid_t me = ::getpid();
  for (size_t i = 0; i < OwnershipTable::kCapacity; ++i)
    ASSERT_EQ(t.claim("app/k" + std::to_string(i), 0, me), Claim::Claimed) << i;
  EXPECT_EQ(t.claim("app/one-too-many", 0, me), Claim::Full);
  for (size_t i = 0; i < OwnershipTable::kCapacity; i += 2) ASSERT_TRUE(t.release("app/k" + std::to_string(i), me));
  for (size_t i = 1; i < OwnershipTable::kCapacity; i += 2) ASSERT_TRUE(t.lookup("app/k" + std::to_string(i))) << i;
  EXPECT_EQ(t.claim("app/one-too-many", 0, me), Claim::Claimed);
  EXPECT_EQ(t.owned_count(), OwnershipTable::kCapacity / 2 + 1);
}

// Two processes claim the same key at the same moment, 1000 times: exactly one wins each round.
TEST(OwnershipTable, TwoProcessesRaceExactlyOneWins) {
  constexpr int kRounds = 1000;
  struct Control {
    std::atomic<int> round{-1};
    std::atomic<int> done{0};
    std::atomic<int> result[kRounds][2];
    std::atomic<int> pid[2];
  };
  void* mem = ::mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* ctl = new (mem) Control();
  OwnershipTable t;
  // Some unrelated entries around, so that probing, tombstones and reuse take part.
  for (int i = 0; i < 64; ++i) t.claim("live/other" + std::to_string(i), 9, ::getpid());

  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = ::fork();
    ASSERT_GE(kids[k], 0);
    if (kids[k] == 0) {
      ctl->pid[k].store(::getpid());
      for (int r = 0; r < kRounds; ++r) {
        for (int spin = 0; ctl->round.load(std::memory_order_acquire) < r; ++spin) {
          if (spin % 4096 == 4095) sched_yield();  // two cores for three processes
        }
        const Claim c = t.claim("live/race", k, ::getpid());
        ctl->result[r][k].store(static_cast<int>(c));
        ctl->done.fetch_add(1);
      }
      _exit(0);
    }
  }
  int wins[2] = {0, 0};
  bool ok = true;
  for (int r = 0; r < kRounds && ok; ++r) {
    ctl->round.store(r, std::memory_order_release);
    while (ctl->done.load() < 2 * (r + 1)) sched_yield();
    const Claim a = static_cast<Claim>(ctl->result[r][0].load());
    const Claim b = static_cast<Claim>(ctl->result[r][1].load());
    const int claimed = (a == Claim::Claimed) + (b == Claim::Claimed);
    EXPECT_EQ(claimed, 1) << "round " << r << ": " << to_string(a) << " / " << to_string(b);
    ok = claimed == 1;
    if (!ok) break;
    const int w = a == Claim::Claimed ? 0 : 1;
    ++wins[w];
    EXPECT_EQ(t.lookup("live/race")->pid, ctl->pid[w].load());
    EXPECT_TRUE(t.release("live/race", ctl->pid[w].load()));
  }
  if (!ok) ctl->round.store(kRounds);  // let the children finish
  for (pid_t kid : kids) {
    int status = 0;
    ::waitpid(kid, &status, 0);
  }
  EXPECT_EQ(wins[0] + wins[1], ok ? kRounds : wins[0] + wins[1]);
  EXPECT_FALSE(t.lookup("live/race"));
  ::munmap(mem, sizeof(Control));
}

}  // namespace
}  // namespace rill::workers
