// workers/stream_totals + workers/stream_tally: per-stream `_total` counters that a killed worker
// leaves behind while the stream lives, and one worker's deltas to them.
#include "rill/workers/stream_totals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "rill/workers/ownership_table.h"
#include "rill/workers/stream_tally.h"

namespace rill::workers {
namespace {

using Values = StreamTotals::Values;
using Life = StreamTotals::Life;

Values values(uint64_t in, uint64_t out, uint64_t dropped, uint64_t segments) {
  return {in, out, dropped, segments};
}

// A child that exits at once: a pid that is certainly gone once reaped.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST(StreamTotals, AddsUpWithinALifeAndStartsFromZeroInTheNext) {
  StreamTotals t;
  const pid_t me = ::getpid();
  EXPECT_EQ(t.read({7, 5}), Values{});  // nothing added yet
  EXPECT_EQ(t.add({7, 5}, values(10, 100, 1, 2), me), StreamTotals::Added::Yes);
  EXPECT_EQ(t.add({7, 5}, values(5, 50, 0, 1), 4242), StreamTotals::Added::Yes);  // any process adds
  EXPECT_EQ(t.read({7, 5}), values(15, 150, 1, 3));
  EXPECT_EQ(t.read({8, 5}), Values{});  // cells are per entry

  // The entry's next life (a later claim) starts from zero...
  EXPECT_EQ(t.read({7, 9}), Values{});
  EXPECT_EQ(t.add({7, 9}, values(1, 2, 3, 4), me), StreamTotals::Added::Yes);
  EXPECT_EQ(t.read({7, 9}), values(1, 2, 3, 4));
  // ...and the earlier life is over: nothing is added to it, nor read of it.
  EXPECT_EQ(t.add({7, 5}, values(1, 1, 1, 1), me), StreamTotals::Added::Ended);
  EXPECT_EQ(t.read({7, 5}), std::nullopt);
  EXPECT_EQ(t.read({7, 9}), values(1, 2, 3, 4));

  EXPECT_EQ(t.add({StreamTotals::kCells, 1}, values(1, 1, 1, 1), me), StreamTotals::Added::Ended);
  EXPECT_EQ(t.read({StreamTotals::kCells, 1}), std::nullopt);
  EXPECT_EQ(t.add({1, 0}, values(1, 1, 1, 1), me), StreamTotals::Added::Ended);  // no ticket, no life
}

TEST(StreamTotals, WhatAKilledWorkerAddedStays) {
  StreamTotals t;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    t.add({3, 11}, values(0, 777, 2, 0), ::getpid());
    ::pause();  // killed below, as kill -9 would
    _exit(0);
  }
  bool added = false;
  for (int i = 0; i < 500 && !added; ++i) {
    added = t.read({3, 11}) == values(0, 777, 2, 0);
    if (!added) ::usleep(2000);
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(added);
  EXPECT_EQ(t.read({3, 11}), values(0, 777, 2, 0));
  EXPECT_EQ(t.add({3, 11}, values(0, 3, 0, 0), ::getpid()), StreamTotals::Added::Yes);  // its respawn adds on
  EXPECT_EQ(t.read({3, 11}), values(0, 780, 2, 0));
}

TEST(StreamTotals, ALockLeftByADeadProcessIsTakenOver) {
  StreamTotals t;
  const pid_t me = ::getpid();
  t.hold_lock_for_test(2, dead_pid());  // killed while adding
  EXPECT_EQ(t.add({2, 1}, values(1, 1, 1, 1), me), StreamTotals::Added::Yes);
  t.hold_lock_for_test(2, me);  // an earlier process with our pid: we never hold it between calls
  EXPECT_EQ(t.add({2, 1}, values(1, 1, 1, 1), me), StreamTotals::Added::Yes);
  EXPECT_EQ(t.read({2, 1}), values(2, 2, 2, 2));
}

TEST(StreamTotals, ALiveHolderMakesItBusyUntilFreed) {
  StreamTotals t;
  const pid_t holder = ::getppid();  // alive for the whole test, and not us
  t.hold_lock_for_test(4, holder);
  EXPECT_EQ(t.add({4, 1}, values(0, 9, 0, 0), ::getpid()), StreamTotals::Added::Busy);
  EXPECT_EQ(t.read({4, 1}), Values{});  // reading takes no lock
  EXPECT_EQ(t.unlock_all_of(holder), 1u);
  EXPECT_EQ(t.unlock_all_of(holder), 0u);
  EXPECT_EQ(t.add({4, 1}, values(0, 9, 0, 0), ::getpid()), StreamTotals::Added::Yes);
  EXPECT_EQ(t.read({4, 1}), values(0, 9, 0, 0));
}

TEST(OwnershipTableLives, LookupNamesTheEntryAndTheClaimsTicket) {
  OwnershipTable table;
  const pid_t me = ::getpid();
  ASSERT_EQ(table.claim("live/a", 0, me), OwnershipTable::Claim::Claimed);
  const auto first = table.lookup("live/a");
  ASSERT_TRUE(first);
  EXPECT_GT(first->ticket, 0u);
  EXPECT_LT(first->index, OwnershipTable::kCapacity);
  StreamTotals& totals = table.stream_totals();
  EXPECT_EQ(totals.add({first->index, first->ticket}, values(1, 10, 0, 0), me), StreamTotals::Added::Yes);

  // The publisher leaves and comes back: a new life, from zero; the old one's deltas go nowhere.
  ASSERT_TRUE(table.release("live/a", me));
  ASSERT_EQ(table.claim("live/a", 1, me), OwnershipTable::Claim::Claimed);
  const auto second = table.lookup("live/a");
  ASSERT_TRUE(second);
  EXPECT_GT(second->ticket, first->ticket);
  const Life now{second->index, second->ticket};
  EXPECT_EQ(totals.read(now), Values{});
  EXPECT_EQ(totals.add(now, values(2, 20, 0, 0), me), StreamTotals::Added::Yes);
  EXPECT_EQ(totals.add({first->index, first->ticket}, values(1, 1, 1, 1), me),
            second->index == first->index ? StreamTotals::Added::Ended : StreamTotals::Added::Yes);
  EXPECT_EQ(totals.read(now), values(2, 20, 0, 0));
}

TEST(OwnershipTableLives, AKilledNonOwnersPartStaysAndTheMasterFreesItsLocks) {
  OwnershipTable table;
  const pid_t holder = ::getppid();
  table.stream_totals().hold_lock_for_test(5, holder);
  table.release_all_of(holder);  // what the master does when it reaps a worker
  EXPECT_EQ(table.stream_totals().add({5, 1}, values(0, 1, 0, 0), ::getpid()), StreamTotals::Added::Yes);

  // A non-owner worker adds its players' part to the owner's stream, then is killed: the part
  // stays in the stream's totals while the stream lives.
  const pid_t me = ::getpid();
  ASSERT_EQ(table.claim("live/k", 0, me), OwnershipTable::Claim::Claimed);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const auto o = table.lookup("live/k");
    if (o) table.stream_totals().add({o->index, o->ticket}, values(0, 5000, 1, 0), ::getpid());
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    ::pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(table.release_all_of(pid), 0u);  // it owned nothing
  const auto o = table.lookup("live/k");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->pid, me);
  EXPECT_EQ(table.stream_totals().add({o->index, o->ticket}, values(700, 300, 0, 2), me),
            StreamTotals::Added::Yes);
  EXPECT_EQ(table.stream_totals().read({o->index, o->ticket}), values(700, 5300, 1, 2));
  ::close(ready[0]);
  ::close(ready[1]);
}

// ------------------------------------------------------------------------------------ tally

Values pending_of(const StreamTally& t, const std::string& key) { return t.pending(key); }

TEST(StreamTally, PlayersCountTheirGrowthOnceAndTheirTailWhenGone) {
  StreamTally t;
  t.player(1, "live/a", 100, 0);
  t.player(2, "live/a", 50, 1);
  t.end_round();
  EXPECT_EQ(pending_of(t, "live/a"), values(0, 150, 1, 0));
  t.player(1, "live/a", 130, 0);
  t.end_round();
  EXPECT_EQ(pending_of(t, "live/a"), values(0, 180, 1, 0));
  // Session 2 stops playing (described as not a player any more), then closes: its tail counts
  // once, for the stream it was seen playing, whatever its last description says.
  t.player_gone(2, "", 70, 3);
  EXPECT_EQ(pending_of(t, "live/a"), values(0, 200, 3, 0));
  // A session gone before any round saw it counts whole for the stream it names.
  t.player_gone(3, "live/b", 40, 0);
  t.player_gone(4, "", 99, 0);  // names none: nothing to count it for
  EXPECT_EQ(pending_of(t, "live/b"), values(0, 40, 0, 0));
  EXPECT_EQ(t.players(), 1u);
  // A session's totals never count backwards.
  t.player(1, "live/a", 120, 0);
  t.end_round();
  EXPECT_EQ(pending_of(t, "live/a"), values(0, 200, 3, 0));
  // A session that plays another stream now: what it sends from then on counts for that one.
  t.player(1, "live/b", 160, 0);
  EXPECT_EQ(pending_of(t, "live/b"), values(0, 70, 0, 0));
}

TEST(StreamTally, StreamCountersCountGrowthAndRestartsFromZero) {
  StreamTally t;
  t.observe("live/a", StreamTally::StreamBytesIn, 1000);
  t.observe("live/a", StreamTally::StreamSegments, 2);
  t.end_round();
  EXPECT_EQ(pending_of(t, "live/a"), values(1000, 0, 0, 2));
  t.observe("live/a", StreamTally::StreamBytesIn, 1500);
  t.observe("live/a", StreamTally::StreamSegments, 3);
  t.end_round();
  EXPECT_EQ(pending_of(t, "live/a"), values(1500, 0, 0, 3));
  // The stream object was replaced: its new counter started from zero.
  t.observe("live/a", StreamTally::StreamBytesIn, 200);
  t.end_round();
  EXPECT_EQ(pending_of(t, "live/a"), values(1700, 0, 0, 3));
  // Segments were absent from the last round: forgotten, they count from zero when back.
  t.observe("live/a", StreamTally::StreamSegments, 4);
  t.observe("live/a", StreamTally::StreamBytesIn, 200);
  t.end_round();
  EXPECT_EQ(pending_of(t, "live/a"), values(1700, 0, 0, 7));
}

TEST(StreamTally, ARelayedCopysBytesInAreRememberedButNotCounted) {
  StreamTally t;
  t.observe("live/a", StreamTally::StreamBytesIn, 5000, /*counts=*/false);  // a worker-link copy
  t.observe("live/a", StreamTally::StreamDrops, 1);
  t.end_round();
  EXPECT_EQ(pending_of(t, "live/a"), values(0, 0, 1, 0));
  // The stream is published on this worker now: only what came in since counts.
  t.observe("live/a", StreamTally::StreamBytesIn, 5600, true);
  t.observe("live/a", StreamTally::StreamDrops, 1);
  t.end_round();
  EXPECT_EQ(pending_of(t, "live/a"), values(600, 0, 1, 0));
}

TEST(StreamTally, PublishClearsWhatWasTakenKeepsWhatWasNotAndForgets) {
  StreamTally t;
  t.player(1, "live/a", 10, 0);
  t.add("live/b", StreamTotals::BytesOut, 5);  // HLS bytes
  t.add("live/b", StreamTotals::BytesOut, 0);
  t.end_round();
  std::vector<std::string> offered;
  t.publish([&](const std::string& key, const Values& d) {
    offered.push_back(key);
    return key == "live/a" && d[StreamTotals::BytesOut] == 10;  // live/b's cell is busy
  });
  EXPECT_EQ(offered.size(), 2u);
  EXPECT_EQ(pending_of(t, "live/a"), Values{});
  EXPECT_EQ(pending_of(t, "live/b"), values(0, 5, 0, 0));
  t.end_round();
  t.publish([&](const std::string&, const Values&) { return true; });
  EXPECT_EQ(pending_of(t, "live/b"), Values{});
  // Nothing left of either stream but the live player's session: one round forgets them.
  t.end_round();
  EXPECT_EQ(t.streams(), 0u);
  EXPECT_EQ(t.players(), 1u);
  t.player_gone(1, "live/a", 10, 0);
  EXPECT_EQ(t.players(), 0u);
  t.end_round();
  EXPECT_EQ(t.streams(), 0u);
  // Nothing pending: publish offers nothing.
  t.publish([&](const std::string&, const Values&) -> bool {
    ADD_FAILURE() << "offered nothing to publish";
    return true;
  });
}

}  // namespace
}  // namespace rill::workers
