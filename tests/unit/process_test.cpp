// Tests of the process module's building blocks (the master itself is tested end to end by
// tests/integration/test_process.py): logging, pid file, listeners, signal helpers.
#include <gtest/gtest.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "rill/core/log.h"
#include "rill/core/stream_log.h"
#include "rill/process/listeners.h"
#include "rill/process/memory_policy.h"
#include "rill/process/pid_file.h"
#include "rill/process/signals.h"

namespace rill {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "rill-unit-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CoreLog, FileLoggerFormatLevelAndReopen) {
  TempDir dir;
  config::LogConfig cfg;
  cfg.level = "info";
  cfg.file = dir.file("sub/rill.log");  // the directory is created
  auto log = core::make_logger("test", cfg, 3);
  log->debug("hidden");
  log->info("hello {}", 42);
  std::string text = read_file(*cfg.file);
  EXPECT_EQ(text.find("hidden"), std::string::npos);
  EXPECT_NE(text.find("] [info] [worker 3] hello 42\n"), std::string::npos) << text;
  ASSERT_EQ(text.front(), '[');

  fs::rename(*cfg.file, *cfg.file + ".1");
  log->info("still old");
  std::string err;
  ASSERT_TRUE(core::reopen_log_files(*log, &err)) << err;
  log->warn("in new");
  EXPECT_NE(read_file(*cfg.file + ".1").find("still old"), std::string::npos);
  EXPECT_NE(read_file(*cfg.file).find("] [warning] [worker 3] in new"), std::string::npos);
}

TEST(CoreLog, MasterRoleAccessLogAndLevels) {
  TempDir dir;
  config::LogConfig cfg;
  cfg.file = dir.file("rill.log");
  auto log = core::make_logger("test", cfg, -1);
  log->info("m");
  EXPECT_NE(read_file(*cfg.file).find("[info] [master] m"), std::string::npos);

  EXPECT_EQ(core::make_access_logger(cfg), nullptr);
  cfg.access_log = dir.file("access.log");
  auto access = core::make_access_logger(cfg);
  ASSERT_NE(access, nullptr);
  access->info("127.0.0.1 - - [05/Dec/2026:02:03:29 +0000] \"GET /live/a.flv HTTP/1.1\" 200");
  std::string text = read_file(*cfg.access_log);
  EXPECT_EQ(text,
            "127.0.0.1 - - [05/Dec/2026:02:03:29 +0000] \"GET /live/a.flv HTTP/1.1\" 200\n");  // as given

  EXPECT_EQ(core::parse_log_level("warn"), spdlog::level::warn);
  EXPECT_EQ(core::parse_log_level("off"), spdlog::level::off);
  EXPECT_THROW(core::parse_log_level("loud"), std::invalid_argument);
  EXPECT_EQ(core::log_role(-1), "master");
  EXPECT_EQ(core::log_role(2), "worker 2");

  cfg.json = true;  // log.format: json
  auto json = core::make_logger("test", cfg, 2);
  json->warn("say \"hi\"\n");
  text = read_file(*cfg.file);
  EXPECT_NE(text.find("\",\"level\":\"warning\",\"worker\":2,\"message\":\"say \\\"hi\\\"\\n\"}\n"),
            std::string::npos)
      << text;

  config::LogConfig bad;
  bad.file = "/proc/rill-cannot-create/x.log";
  EXPECT_THROW(core::make_logger("x", bad, -1), std::runtime_error);
  core::make_null_logger()->info("nowhere");
}

TEST(CoreLog, StreamLogLinesCarryTheStreamInJsonOnly) {
  TempDir dir;
  config::LogConfig cfg;
  cfg.file = dir.file("text.log");
  auto text_log = core::make_logger("test", cfg, 1);
  core::StreamLog(*text_log, "live/cam").info("publish start: {} ({} subscriber(s) waiting)", "live/cam", 0);
  core::StreamLog(*text_log, "live/cam").debug("hidden at info");
  std::string text = read_file(*cfg.file);
  // Text: the line reads as written, the stream named once (by the message).
  EXPECT_NE(text.find("] [info] [worker 1] publish start: live/cam (0 subscriber(s) waiting)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("hidden"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;

  cfg.file = dir.file("json.log");
  cfg.json = true;
  auto json_log = core::make_logger("test", cfg, 1);
  core::StreamLog(*json_log, "live/\"odd\"").warn("hls: {}: dropped", "live/\"odd\"");
  json_log->info("not about a stream");
  text = read_file(*cfg.file);
  EXPECT_NE(text.find("\",\"level\":\"warning\",\"worker\":1,\"stream\":\"live/\\\"odd\\\"\","
                      "\"message\":\"hls: live/\\\"odd\\\": dropped\"}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"worker\":1,\"message\":\"not about a stream\"}\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"stream\":", text.find("not about")), std::string::npos) << text;

  core::StreamLog(*core::make_null_logger(), "live/cam").error("nowhere");
}

TEST(ProcessPidFile, WritesLocksAndRemoves) {
  TempDir dir;
  std::string path = dir.file("run/rill.pid");
  {
    process::PidFile pf(path);
    std::string err;
    auto pid = process::read_pid_file(path, &err);
    ASSERT_TRUE(pid) << err;
    EXPECT_EQ(*pid, ::getpid());
    // A second holder (another open file description) is refused while the lock is held.
    try {
      process::PidFile again(path);
      FAIL() << "second pid file accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("already running (pid " + std::to_string(::getpid())),
                std::string::npos)
          << e.what();
    }
    EXPECT_TRUE(fs::exists(path));
  }
  EXPECT_FALSE(fs::exists(path));

  // A stale file (no lock, dead pid) is taken over.
  std::ofstream(path) << "999999999\n";
  {
    process::PidFile pf(path);
    EXPECT_EQ(process::read_pid_file(path, nullptr), ::getpid());
  }
  std::string err;
  EXPECT_FALSE(process::read_pid_file(path, &err));
  EXPECT_NE(err.find("cannot open pid file"), std::string::npos);
  std::ofstream(path) << "garbage\n";
  EXPECT_FALSE(process::read_pid_file(path, &err));
  EXPECT_NE(err.find("does not hold a pid"), std::string::npos);
}

config::Config listen_config(std::vector<config::ListenAddress> rtmp,
                             std::vector<config::ListenAddress> http) {
  config::Config cfg;
  cfg.rtmp.listen = std::move(rtmp);
  cfg.http.listen = std::move(http);
  cfg.api.listen.clear();  // not the default 127.0.0.1:8081: these tests count their own sockets
  return cfg;
}

bool is_listening(int fd) {
  int v = 0;
  socklen_t len = sizeof(v);
  return ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0 && v == 1;
}

TEST(ProcessListeners, ReconcileKeepsBindsAndCloses) {
  auto log = core::make_null_logger();
  process::Listeners l;
  // Port 0: the first socket picks a port, the other slots share it.
  auto cfg = listen_config({{"127.0.0.1", 0}}, {{"127.0.0.1", 0}});
  l.reconcile(cfg, 2, *log);
  ASSERT_EQ(l.socket_count(), 4u);
  auto r0 = l.fds(process::ListenerKind::rtmp, 0);
  auto r1 = l.fds(process::ListenerKind::rtmp, 1);
  ASSERT_EQ(r0.size(), 1u);
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_NE(r0[0], r1[0]);
  EXPECT_EQ(process::bound_port(r0[0]), process::bound_port(r1[0]));
  EXPECT_TRUE(is_listening(r0[0]));
  uint16_t rtmp_port = process::bound_port(r0[0]);

  // The same addresses with 3 slots: existing sockets are kept, one more per address.
  l.reconcile(cfg, 3, *log);
  EXPECT_EQ(l.socket_count(), 6u);
  EXPECT_EQ(l.fds(process::ListenerKind::rtmp, 0), r0);
  EXPECT_EQ(l.fds(process::ListenerKind::rtmp, 1), r1);
  EXPECT_EQ(process::bound_port(l.fds(process::ListenerKind::rtmp, 2)[0]), rtmp_port);

  // A port taken by someone else: the reconcile fails and changes nothing.
  int blocker = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(blocker, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(::listen(blocker, 1), 0);
  uint16_t taken = process::bound_port(blocker);
  auto bad = listen_config({{"127.0.0.1", 0}}, {{"127.0.0.1", taken}});
  try {
    l.reconcile(bad, 1, *log);
    FAIL() << "bound a taken port";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Address already in use"), std::string::npos) << e.what();
  }
  EXPECT_EQ(l.socket_count(), 6u);
  EXPECT_TRUE(is_listening(r0[0]));
  ::close(blocker);

  // Same address twice: refused.
  auto dup = listen_config({{"127.0.0.1", 5555}}, {{"127.0.0.1", 5555}});
  EXPECT_THROW(l.reconcile(dup, 1, *log), std::runtime_error);

  // Down to 1 slot and no HTTP: the rest is closed.
  auto http_fd = l.fds(process::ListenerKind::http, 0)[0];
  l.reconcile(listen_config({{"127.0.0.1", 0}}, {}), 1, *log);
  EXPECT_EQ(l.socket_count(), 1u);
  EXPECT_EQ(l.fds(process::ListenerKind::rtmp, 0), r0);
  EXPECT_TRUE(l.fds(process::ListenerKind::http, 0).empty());
  EXPECT_FALSE(is_listening(r1[0]));
  EXPECT_FALSE(is_listening(http_fd));
  l.close_all();
  EXPECT_EQ(l.socket_count(), 0u);
}

TEST(ProcessListeners, ExclusiveCheckSeesReuseportGroups) {
  config::ListenAddress any{"127.0.0.1", 0};
  int fd = process::bind_listener(any);
  config::ListenAddress same{"127.0.0.1", process::bound_port(fd)};
  EXPECT_THROW(process::check_address_free(same), std::runtime_error);
  int fd2 = process::bind_listener(same);  // joining the group is what check_address_free prevents
  EXPECT_GE(fd2, 0);
  ::close(fd);
  ::close(fd2);
  EXPECT_NO_THROW(process::check_address_free(same));
  config::ListenAddress v6{"::1", 0};
  int fd6 = -1;
  try {
    fd6 = process::bind_listener(v6);
  } catch (const std::runtime_error&) {
    GTEST_SKIP() << "no IPv6 loopback";
  }
  EXPECT_TRUE(is_listening(fd6));
  ::close(fd6);
}

TEST(ProcessSignals, NamesCommandsAndWaitStatus) {
  EXPECT_EQ(process::signal_for_command("reload"), SIGHUP);
  EXPECT_EQ(process::signal_for_command("stop"), SIGTERM);
  EXPECT_EQ(process::signal_for_command("quit"), SIGQUIT);
  EXPECT_EQ(process::signal_for_command("reopen"), SIGUSR1);
  EXPECT_FALSE(process::signal_for_command("restart"));
  EXPECT_EQ(process::signal_name(SIGKILL), "SIGKILL");

  pid_t pid = ::fork();
  if (pid == 0) _exit(3);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(process::describe_wait_status(status), "exited with code 3");
  pid = ::fork();
  if (pid == 0) {
    ::pause();
    _exit(0);
  }
  ::kill(pid, SIGKILL);
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(process::describe_wait_status(status), "killed by signal 9 (SIGKILL)");
}

// The worker's glibc malloc policy (memory_policy.h), in a process whose malloc is glibc's (this
// test binary links no other allocator; under a sanitizer it is skipped).
TEST(MallocPolicy, AppliesToGlibcOnlyAndKeepsLargeBlocksOutOfTheHeap) {
  const std::string lib = process::malloc_library();
  ASSERT_FALSE(lib.empty()) << "dladdr found no object for malloc";
  EXPECT_EQ(process::glibc_malloc(), lib.starts_with("libc.so")) << lib;
  if (!process::glibc_malloc()) GTEST_SKIP() << "malloc comes from " << lib;
  process::apply_worker_malloc_policy();
  // glibc alone would raise its mmap threshold to 16 MB once a 16 MB mapped block is freed, and
  // take the next block under 16 MB from the heap; with the threshold fixed at 256 KiB it is mapped.
  void* volatile big = std::malloc(16u << 20);
  std::free(big);
  // The threshold decides only when the heap must grow: a free chunk that fits (what earlier
  // tests of this binary left) serves any size. So the block is larger than all free heap space.
  ::malloc_trim(0);
  const size_t size = std::max<size_t>(300 * 1024, mallinfo2().fordblks + (1u << 20));
  ASSERT_LT(size, 16u << 20) << "the heap holds too much free space for this check";
  const size_t mapped_before = mallinfo2().hblks;
  void* volatile block = std::malloc(size);
  EXPECT_EQ(mallinfo2().hblks, mapped_before + 1) << "a " << size << "-byte block came from the heap";
  std::free(block);
}

}  // namespace
}  // namespace rill
