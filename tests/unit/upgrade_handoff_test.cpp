// The binary upgrade's handoff (process/upgrade_handoff.h), its worker link version check, and
// the memfd-backed shared areas a new master maps again (workers/shared_area.h).
#include "rill/process/upgrade_handoff.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "rill/workers/ownership_table.h"
#include "rill/workers/server_counters.h"
#include "rill/workers/shared_area.h"

using namespace rill::process;

namespace {

UpgradeHandoff sample() {
  UpgradeHandoff h;
  h.link_version = kWorkerLinkVersion;
  h.version = "0.1.0+upgrade-test";
  h.old_master = 4100;
  h.generation = 3;
  h.force = true;
  h.ownership = 5;
  h.hls_memo = 6;
  h.stream_totals = 7;
  h.counters = 8;
  h.listeners = {{"rtmp", "127.0.0.1:1935", {9, 10}}, {"http.tls", "[::]:8443", {11, 12}}};
  return h;
}

}  // namespace

TEST(UpgradeHandoff, RoundTrips) {
  const UpgradeHandoff h = sample();
  const std::string text = encode_upgrade_handoff(h);
  EXPECT_EQ(text,
            "link=1;version=0.1.0+upgrade-test;master=4100;generation=3;force=1;shm=5,6,7,8;"
            "listen=rtmp,127.0.0.1:1935,9,10;listen=http.tls,[::]:8443,11,12");
  std::string error;
  auto back = parse_upgrade_handoff(text, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->link_version, 1u);
  EXPECT_EQ(back->version, h.version);
  EXPECT_EQ(back->old_master, 4100);
  EXPECT_EQ(back->generation, 3);
  EXPECT_TRUE(back->force);
  EXPECT_EQ(back->counters, 8);
  ASSERT_EQ(back->listeners.size(), 2u);
  EXPECT_EQ(back->listeners[1].kind, "http.tls");
  EXPECT_EQ(back->listeners[1].address, "[::]:8443");
  EXPECT_EQ(back->listeners[1].fds, (std::vector<int>{11, 12}));
}

TEST(UpgradeHandoff, RefusesMalformedText) {
  for (const char* bad :
       {"", "link=1", "link=1;master=4100", "link=x;master=1;shm=1,2,3,4", "link=1;master=0;shm=1,2,3,4",
        "link=1;master=1;shm=1,2,3", "link=1;master=1;shm=1,2,3,-4",
        "link=1;master=1;shm=1,2,3,4;listen=rtmp,1.2.3.4:1", "link=1;master=1;shm=1,2,3,4;listen=rtmp,a:1,x",
        "link=1;master=1;shm=1,2,3,4;what=1", "link=1;master=1;shm=1,2,3,4;force=2",
        "link=1;master=1;shm=1,2,3,4;version=a b", "link=1;master=1;shm=1,2,3,4;;"}) {
    std::string error;
    EXPECT_FALSE(parse_upgrade_handoff(bad, &error)) << bad;
    EXPECT_EQ(error.rfind("RILL_UPGRADE: ", 0), 0u) << bad << ": " << error;
  }
}

TEST(UpgradeHandoff, LinkVersionMismatchNamesBothSides) {
  EXPECT_FALSE(link_version_mismatch(1, "0.1.0", 1, "0.2.0"));
  auto why = link_version_mismatch(1, "0.1.0", 2, "0.2.0");
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "the running rill 0.1.0 speaks worker link version 1, this binary (rill 0.2.0) version 2");
}

TEST(SharedArea, AnInheritedDescriptorMapsTheSameBytes) {
  rill::workers::SharedArea first("test-area", 4096);
  std::memcpy(first.data(), "hello", 5);
  EXPECT_FALSE(first.adopted());
  rill::workers::SharedArea second("test-area", 4096, ::dup(first.fd()));
  EXPECT_TRUE(second.adopted());
  EXPECT_EQ(std::memcmp(second.data(), "hello", 5), 0);
  std::memcpy(second.data(), "world", 5);
  EXPECT_EQ(std::memcmp(first.data(), "world", 5), 0);
  const int other = ::dup(first.fd());
  EXPECT_THROW(rill::workers::SharedArea("test-area", 8192, other), std::runtime_error);
  ::close(other);
}

TEST(SharedArea, ANewMasterSeesTheOldOnesClaimsAndCounters) {
  rill::workers::OwnershipTable old_table;
  rill::workers::ServerCounters old_counters;
  ASSERT_EQ(old_table.claim("live/cam", 0, ::getpid()), rill::workers::OwnershipTable::Claim::Claimed);
  old_counters.add(1, rill::workers::Counter::Respawns, 3);
  const auto fds = old_table.shared_fds();
  rill::workers::OwnershipTable new_table(rill::workers::OwnershipTable::SharedFds{
      ::dup(fds.table), ::dup(fds.hls_memo), ::dup(fds.stream_totals)});
  rill::workers::ServerCounters new_counters(::dup(old_counters.shared_fd()));
  auto owner = new_table.lookup("live/cam");
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->pid, ::getpid());  // a live owner: not taken over
  EXPECT_EQ(new_table.claim("live/cam", 1, 4343), rill::workers::OwnershipTable::Claim::Busy);
  EXPECT_EQ(new_counters.get(1, rill::workers::Counter::Respawns), 3u);
  EXPECT_EQ(new_counters.started_unix_ms(), old_counters.started_unix_ms());
}
