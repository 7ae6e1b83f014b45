// The `merge_writes` / `merge_writes_max` / `send_method` keys (config/merge_writes_config.cpp).
#include <gtest/gtest.h>

#include <chrono>

#include "config_test_util.h"
#include "rill/config/config.h"

namespace rill::config {
namespace {

using std::chrono::milliseconds;

TEST(MergeWritesConfig, AutoIsTheDefault) {
  const Config c = load(kApps);
  EXPECT_TRUE(c.merge_writes_auto);
  EXPECT_EQ(c.merge_writes_max, milliseconds(80));
  EXPECT_TRUE(load_default_config().merge_writes_auto);
}

TEST(MergeWritesConfig, AutoWithACap) {
  const Config c = load("merge_writes: auto\nmerge_writes_max: 40ms\n" + kApps);
  EXPECT_TRUE(c.merge_writes_auto);
  EXPECT_EQ(c.merge_writes_max, milliseconds(40));
}

TEST(MergeWritesConfig, FixedDurationsStayValid) {
  const Config zero = load("merge_writes: 0s\n" + kApps);
  EXPECT_FALSE(zero.merge_writes_auto);
  EXPECT_EQ(zero.merge_writes, milliseconds(0));
  const Config fixed = load("merge_writes: 100ms\n" + kApps);
  EXPECT_FALSE(fixed.merge_writes_auto);
  EXPECT_EQ(fixed.merge_writes, milliseconds(100));
}

TEST(MergeWritesConfig, BadValuesSayWhere) {
  EXPECT_CONTAINS(error_of("merge_writes: fast\n" + kApps), "t.yaml:1:15: merge_writes: expected a duration");
  EXPECT_CONTAINS(error_of("merge_writes: [auto]\n" + kApps),
                  "merge_writes: expected auto or a duration, got a list");
  EXPECT_CONTAINS(error_of("merge_writes: 2s\n" + kApps), "merge_writes");
  EXPECT_CONTAINS(error_of("merge_writes_max: 200ms\n" + kApps), "merge_writes_max");
  EXPECT_CONTAINS(error_of("merge_writes_max: 0s\n" + kApps), "merge_writes_max");
}

TEST(SendMethodConfig, IoUringByDefaultSendmsgOnRequest) {
  EXPECT_EQ(load(kApps).send_method, Config::SendMethod::IoUring);
  EXPECT_EQ(load_default_config().send_method, Config::SendMethod::IoUring);
  EXPECT_EQ(load("send_method: io_uring\n" + kApps).send_method, Config::SendMethod::IoUring);
  EXPECT_EQ(load("send_method: sendmsg\n" + kApps).send_method, Config::SendMethod::Sendmsg);
}

TEST(SendMethodConfig, AnUnknownMethodNamesTheChoices) {
  EXPECT_CONTAINS(error_of("send_method: iouring\n" + kApps),
                  "t.yaml:1:14: send_method: expected one of sendmsg, io_uring; got 'iouring'; did you mean "
                  "'io_uring'?");
  EXPECT_CONTAINS(error_of("send_method: [sendmsg]\n" + kApps), "send_method");
}

}  // namespace
}  // namespace rill::config
