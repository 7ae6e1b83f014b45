// apps.NAME.exec: parsing and errors (FILE:LINE:COL), argument expansion, the names / hop rule,
// and the pure schedule of the children (restart back-off, log line budget).
#include "rill/config/exec_config.h"

#include <gtest/gtest.h>

#include "config_test_util.h"
#include "rill/server/exec_schedule.h"

namespace rill::config {
namespace {

using std::chrono::milliseconds;

TEST(ExecConfig, DefaultsToNoHooks) {
  const Config c = load(kApps);
  EXPECT_TRUE(c.apps.at("live").exec.empty());
  EXPECT_EQ(c.exec_max, 64u);
}

TEST(ExecConfig, ReadsHooks) {
  const Config c =
      load("exec_max: 3\n" + kLive +
           "    exec:\n"
           "      - on: publish\n"
           "        command: [ffmpeg, -i, 'rtmp://127.0.0.1/{app}/{name}', 'x/{name}_lo?{hop}']\n"
           "        restart: 2s\n"
           "        names: ['cam*']\n"
           "      - on: record_done\n"
           "        command: [/bin/echo, '{path}']\n");
  EXPECT_EQ(c.exec_max, 3u);
  const auto& hooks = c.apps.at("live").exec;
  ASSERT_EQ(hooks.size(), 2u);
  EXPECT_EQ(hooks[0].on, ExecEvent::Publish);
  EXPECT_EQ(hooks[0].command.size(), 4u);
  EXPECT_EQ(hooks[0].restart, milliseconds(2000));
  EXPECT_EQ(hooks[0].names, std::vector<std::string>{"cam*"});
  EXPECT_EQ(hooks[1].on, ExecEvent::RecordDone);
  EXPECT_EQ(hooks[1].restart, milliseconds(0));
}

TEST(ExecConfig, Errors) {
  EXPECT_EQ(error_of(kLive + "    exec:\n      - on: publish\n        command: []\n"),
            "t.yaml:5:18: apps.live.exec[0].command: expected a non-empty list (argv: the program, then its "
            "arguments), got a list");
  EXPECT_NE(error_of(kLive + "    exec:\n      - on: publish\n        command: [sh, '{nmae}']\n")
                .find("unknown placeholder {nmae}: expected {app}, {name}, {group}, {query}, {addr}, {path} "
                      "or {hop}; "
                      "did you mean {name}?"),
            std::string::npos);
  EXPECT_NE(error_of(kLive + "    exec:\n      - on: pubish\n        command: [sh]\n").find("exec[0].on"),
            std::string::npos);
  EXPECT_NE(error_of(kLive + "    exec:\n      - command: [sh]\n").find("missing: on"), std::string::npos);
  EXPECT_NE(
      error_of(kLive + "    exec:\n      - on: publish_done\n        command: [sh]\n        restart: 1s\n")
          .find("only a publish hook restarts"),
      std::string::npos);
  EXPECT_NE(error_of(kLive + "    exec: {on: publish}\n").find("expected a list of hooks"),
            std::string::npos);
  EXPECT_NE(error_of(kLive + "    exec:\n      - on: publish\n        command: [sh]\n        shell: true\n")
                .find("shell"),
            std::string::npos);
}

TEST(ExecConfig, ExpandsPlaceholders) {
  const ExecVars v{"live", "cam1_hi", "k=v", "10.0.0.1", "/r/cam1.mp4", "cam1"};
  EXPECT_EQ(expand_exec_arg("rtmp://h/{app}/{name}_lo?{hop}", v), "rtmp://h/live/cam1_hi_lo?rill_hop=exec");
  EXPECT_EQ(expand_exec_arg("rtmp://h/{app}/{group}_lo", v), "rtmp://h/live/cam1_lo");
  EXPECT_EQ(expand_exec_arg("{query} {addr} {path}", v), "k=v 10.0.0.1 /r/cam1.mp4");
  EXPECT_FALSE(exec_arg_error("{group}").has_value());
  EXPECT_EQ(expand_exec_arg("{{name}} }}", v), "{name} }");
  EXPECT_EQ(expand_exec_arg("plain", v), "plain");
  EXPECT_TRUE(exec_arg_error("a}b").has_value());
  EXPECT_TRUE(exec_arg_error("a{b").has_value());
  EXPECT_FALSE(exec_arg_error("{{a}}").has_value());
}

TEST(ExecConfig, NamesAndHopRule) {
  EXPECT_TRUE(exec_name_matches("*", "anything"));
  EXPECT_TRUE(exec_name_matches("cam*", "cam1"));
  EXPECT_TRUE(exec_name_matches("*_hd", "x_hd"));
  EXPECT_TRUE(exec_name_matches("a*b*c", "axxbyyc"));
  EXPECT_FALSE(exec_name_matches("cam*", "xcam1"));
  EXPECT_FALSE(exec_name_matches("*_lo", "cam_lo2"));
  EXPECT_FALSE(exec_name_matches("cam", "cam1"));
  ExecHook all;
  EXPECT_TRUE(exec_hook_applies(all, "cam1", ""));
  EXPECT_TRUE(exec_hook_applies(all, "cam1", "token=1&rill_hop=other"));
  EXPECT_FALSE(exec_hook_applies(all, "cam1_lo", "rill_hop=exec"));
  EXPECT_FALSE(exec_hook_applies(all, "cam1_lo", "token=1&rill_hop=exec"));
  ExecHook cams;
  cams.names = {"cam*", "studio"};
  EXPECT_TRUE(exec_hook_applies(cams, "studio", ""));
  EXPECT_FALSE(exec_hook_applies(cams, "studio_lo", ""));
}

}  // namespace
}  // namespace rill::config

namespace rill::server {
namespace {

using std::chrono::milliseconds;

TEST(ExecSchedule, RestartBackOffDoublesToThirtySeconds) {
  const milliseconds base{2000};
  milliseconds d = exec_restart_delay(base, milliseconds(0), milliseconds(100));
  EXPECT_EQ(d, milliseconds(2000));
  std::vector<int64_t> seen;
  for (int i = 0; i < 6; ++i) {
    d = exec_restart_delay(base, d, milliseconds(100));
    seen.push_back(d.count());
  }
  EXPECT_EQ(seen, (std::vector<int64_t>{4000, 8000, 16000, 30000, 30000, 30000}));
  // A run of 30 s or more starts the schedule over.
  EXPECT_EQ(exec_restart_delay(base, milliseconds(30000), milliseconds(30000)), base);
  // A restart above the ceiling is kept as it is.
  EXPECT_EQ(exec_restart_delay(milliseconds(60000), milliseconds(60000), milliseconds(1)),
            milliseconds(60000));
}

TEST(ExecSchedule, WorkerSharesAddUpToExecMax) {
  EXPECT_EQ(exec_worker_share(64, 1, 0), 64u);
  EXPECT_EQ(exec_worker_share(64, 4, 3), 16u);
  // 10 over 4 workers: 3, 3, 2, 2.
  std::vector<uint32_t> shares;
  for (uint32_t slot = 0; slot < 4; ++slot) shares.push_back(exec_worker_share(10, 4, slot));
  EXPECT_EQ(shares, (std::vector<uint32_t>{3, 3, 2, 2}));
  // Fewer children than workers: the first slots get one each, the others none.
  EXPECT_EQ(exec_worker_share(1, 2, 0), 1u);
  EXPECT_EQ(exec_worker_share(1, 2, 1), 0u);
  EXPECT_EQ(exec_worker_share(0, 2, 0), 0u);
}

TEST(ExecSchedule, LineBudgetTwentyASecond) {
  ExecLineBudget b;
  uint64_t suppressed = 0;
  int kept = 0;
  for (int i = 0; i < 50; ++i) kept += b.take(1000 + i, suppressed) ? 1 : 0;
  EXPECT_EQ(kept, 20);
  EXPECT_EQ(b.dropped(), 30u);
  EXPECT_FALSE(b.take(1999, suppressed));  // same window: dropped too
  EXPECT_EQ(suppressed, 0u);
  EXPECT_TRUE(b.take(2000, suppressed));  // the next window: the count of the last one
  EXPECT_EQ(suppressed, 31u);
  EXPECT_EQ(b.dropped(), 0u);
}

}  // namespace
}  // namespace rill::server
