// workers/worker_sockets: finding the worker processes (both generations) by their sockets.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "rill/workers/worker_sockets.h"

using namespace rill::workers;

TEST(WorkerSockets, ParsesPerPidNamesOnly) {
  const auto a = parse_worker_socket_name("worker-3.12345.sock");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->slot, 3);
  EXPECT_EQ(a->pid, 12345);
  for (const char* bad : {"worker-3.sock", "worker-3.12345.sock.tmp", "worker-.1.sock", "worker-1..sock",
                          "worker-1.0.sock", "worker--1.5.sock", "worker-1.+5.sock", "worker-1.5.6.sock",
                          "worker-1.1234567890.sock", "other-1.5.sock", "worker-1.5.socks", "worker-.sock", ""}) {
    EXPECT_FALSE(parse_worker_socket_name(bad)) << bad;
  }
}

TEST(WorkerSockets, ListsLiveProcessesAndSkipsLeftovers) {
  const auto dir = std::filesystem::temp_directory_path() / ("rill-sockets-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string mine = (dir / ("worker-0." + std::to_string(::getpid()) + ".sock")).string();
  std::ofstream(mine).put('x');
  std::ofstream(dir / "worker-0.sock").put('x');  // a slot name: not listed
  // A pid that cannot be alive (above the kernel's pid_max of 4194304): a killed worker's leftover.
  std::ofstream(dir / "worker-1.999999999.sock").put('x');
  const auto found = list_worker_sockets(dir.string());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].path, mine);
  EXPECT_EQ(found[0].pid, ::getpid());
  EXPECT_EQ(found[0].slot, 0);
  EXPECT_EQ(socket_inode(mine), found[0].inode);
  EXPECT_TRUE(list_worker_sockets((dir / "missing").string()).empty());
  std::filesystem::remove_all(dir);
}
