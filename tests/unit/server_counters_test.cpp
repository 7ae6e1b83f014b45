// workers/server_counters: the shared `_total` counters a respawned worker continues from.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rill/workers/server_counters.h"

using namespace rill::workers;

TEST(ServerCounters, PublishAddsDeltasOnly) {
  ServerCounters shared;
  CounterPublisher a(&shared, 1);
  EXPECT_EQ(a.publish(Counter::BytesIn, 100), 100u);
  EXPECT_EQ(a.publish(Counter::BytesIn, 150), 150u);
  EXPECT_EQ(a.publish(Counter::BytesIn, 120), 150u);  // a total never shrinks the row
  // A respawned worker of the same slot starts its own totals from zero and adds to the row.
  CounterPublisher b(&shared, 1);
  EXPECT_EQ(b.publish(Counter::BytesIn, 10), 160u);
  EXPECT_EQ(shared.get(0, Counter::BytesIn), 0u);
  EXPECT_EQ(shared.get(kCounterSlots, Counter::BytesIn), 0u);
  shared.add(kCounterSlots, Counter::BytesIn, 5);  // ignored, no overflow
}

TEST(ServerCounters, SharedWithAForkedChild) {
  ServerCounters shared;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    CounterPublisher child(&shared, 0);
    child.publish(Counter::AcceptedRtmp, 7);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(shared.get(0, Counter::AcceptedRtmp), 7u);  // the child is gone, its count stays
  EXPECT_GT(shared.started_unix_ms(), 0);
}

TEST(ServerCounters, WithoutSharedMemoryCountsLocally) {
  CounterPublisher local(nullptr, 0);
  EXPECT_EQ(local.publish(Counter::CpuMicros, 5), 5u);
  EXPECT_EQ(local.publish(Counter::CpuMicros, 9), 9u);
}
