// rill — command line.
//
//   rill [-c FILE] [-p PIDFILE]            run (master + workers, in the foreground)
//   rill -t [-c FILE]                      validate the configuration and exit
//   rill -s reload|stop|quit|reopen [-c FILE | -p PIDFILE]
//                                          signal the running master through its pid file
//   rill token --secret S --publish|--play APP/NAME [--ttl 1h]
//                                          print a signed token query (docs/security.md)
//   rill -v | -h
#include <dlfcn.h>
#include <event2/event.h>
#include <fmt/core.h>
#include <getopt.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <signal.h>
#include <spdlog/version.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#ifdef RILL_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif
#ifdef RILL_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "rill/config/config.h"
#include "rill/core/version.h"
#include "rill/process/binary_upgrade.h"
#include "rill/process/master.h"
#include "rill/process/pid_file.h"
#include "rill/process/privileges.h"
#include "rill/process/proctitle.h"
#include "rill/process/signals.h"
#include "rill/server/token_command.h"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "Usage: rill [-c FILE] [-t] [-s SIGNAL [--force]] [-p PIDFILE] [-v] [-h]\n"
               "\n"
               "Live streaming server: RTMP in; RTMP, HTTP-FLV and HLS out.\n"
               "\n"
               "  -c, --config FILE      configuration file (default: the built-in configuration)\n"
               "  -t, --test             check the configuration, print 'configuration OK' and exit\n"
               "  -s, --signal SIGNAL    send SIGNAL to the running master and exit:\n"
               "                           reload  reload the configuration (SIGHUP)\n"
               "                           stop    fast stop (SIGTERM)\n"
               "                           quit    graceful stop (SIGQUIT)\n"
               "                           reopen  reopen the log files (SIGUSR1)\n"
               "                           upgrade exec the binary at its path again, dropping nobody\n"
               "                                   (SIGUSR2); with --force, a restart when the worker\n"
               "                                   link versions differ\n"
               "  -p, --pid-file PIDFILE  pid file (overrides pid_file from the configuration)\n"
               "  -v, --version          print the version of rill and of its libraries\n"
               "  -h, --help             print this help\n"
               "\n"
               "       rill token --secret S --publish|--play APP/NAME [--ttl 1h]\n"
               "                         print a signed token query (expires=...&sign=...)\n");
}

// The file a shared library symbol was loaded from, resolved through symlinks
// ("/usr/lib/x86_64-linux-gnu/libyaml-cpp.so.0.7.0"); empty if unknown (static link).
std::string library_file_of(const void* symbol) {
  Dl_info info{};
  if (!symbol || ::dladdr(symbol, &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  auto real = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::string(info.dli_fname) : real.string();
}

// "0.7.0" out of ".../libyaml-cpp.so.0.7.0".
std::string version_from_soname(const std::string& file) {
  auto pos = file.rfind(".so.");
  return pos == std::string::npos ? std::string() : file.substr(pos + 4);
}

void print_versions() {
  std::printf("rill %.*s\n", static_cast<int>(rill::core::version().size()), rill::core::version().data());
  std::string ev = event_get_version();
  std::printf("libevent %s%s\n", ev.c_str(),
              ev == LIBEVENT_VERSION ? "" : (" (built with " + std::string(LIBEVENT_VERSION) + ")").c_str());
  std::string ssl = OpenSSL_version(OPENSSL_VERSION);
  std::printf("%s%s\n", ssl.c_str(),
              ssl == OPENSSL_VERSION_TEXT ? "" : (" (built with " + std::string(OPENSSL_VERSION_TEXT) + ")").c_str());
  // yaml-cpp has no version API; the version is the one of the shared library we run with.
  auto yaml_load = static_cast<YAML::Node (*)(const std::string&)>(&YAML::Load);
  std::string yaml_version = version_from_soname(library_file_of(reinterpret_cast<const void*>(yaml_load)));
  std::printf("yaml-cpp %s\n", yaml_version.empty() ? "(version unknown: statically linked)" : yaml_version.c_str());
  std::printf("spdlog %d.%d.%d\n", SPDLOG_VER_MAJOR, SPDLOG_VER_MINOR, SPDLOG_VER_PATCH);
  std::printf("fmt %d.%d.%d\n", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100);
#ifdef RILL_HAVE_SYSTEMD
  // No version API either: name the shared object sd_notify comes from.
  std::string sd = library_file_of(reinterpret_cast<const void*>(&sd_notify));
  std::printf("libsystemd %s (sd_notify)\n",
              sd.empty() ? "(statically linked)" : std::filesystem::path(sd).filename().c_str());
#else
  std::printf("libsystemd: not built in (no sd_notify)\n");
#endif
#ifdef RILL_HAVE_JEMALLOC
  // The allocator: its version through mallctl(3), and whether malloc() really lands in it (a
  // library loaded ahead of it, LD_PRELOAD, could take the symbol): this thread's allocated-bytes
  // counter must grow by a malloc.
  const char* je = nullptr;
  size_t len = sizeof je;
  const bool named = mallctl("version", &je, &len, nullptr, 0) == 0 && je;
  uint64_t before = 0, after = 0;
  len = sizeof before;
  mallctl("thread.allocated", &before, &len, nullptr, 0);
  void* volatile probe = std::malloc(4096);  // volatile: a malloc/free pair may be elided
  len = sizeof after;
  mallctl("thread.allocated", &after, &len, nullptr, 0);
  std::free(probe);
  std::printf("malloc: jemalloc %s%s\n", named ? je : "(version unknown)",
              after >= before + 4096 ? "" : " (linked, but malloc() is served by another allocator)");
#else
  std::printf("malloc: the C library's\n");
#endif
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

int test_config(const rill::process::MasterOptions& opts) {
  try {
    rill::config::Config cfg = rill::process::load_master_config(opts);
    if (cfg.user) rill::process::resolve_user(*cfg.user);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::printf("configuration OK\n");
  return 0;
}

// `rill -s upgrade`: the master's answer (binary_upgrade.h), within the time it gives the new
// master to be ready. Exit 0: upgraded; 1: failed or refused (the master's log says why).
int wait_upgrade_outcome(pid_t master, const sigset_t& answer, const std::string& pid_path) {
  const auto deadline =
      std::chrono::steady_clock::now() + rill::process::kUpgradeReadyTimeout + std::chrono::seconds(5);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    timespec ts{static_cast<time_t>(left.count() / 1000), static_cast<long>(left.count() % 1000) * 1000000L};
    siginfo_t info{};
    if (::sigtimedwait(&answer, &info, &ts) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (info.si_pid != master) continue;
    if (info.si_value.sival_int == 0) {
      auto now = rill::process::read_pid_file(pid_path, nullptr);
      std::printf("rill: upgraded: the new master is pid %d\n", now ? static_cast<int>(*now) : 0);
      return 0;
    }
    std::fprintf(stderr,
                 "rill: binary upgrade failed; the running master (pid %d) keeps serving: see its log\n",
                 static_cast<int>(master));
    return 1;
  }
  std::fprintf(stderr, "rill: no answer from the master (pid %d) about the upgrade: see its log\n",
               static_cast<int>(master));
  return 1;
}

int send_signal(const rill::process::MasterOptions& opts, const std::string& command, bool force) {
  auto sig = rill::process::signal_for_command(command);
  if (!sig) {
    std::fprintf(stderr, "rill: unknown signal '%s' (expected reload, stop, quit, reopen or upgrade)\n",
                 command.c_str());
    return 1;
  }
  if (force && *sig != SIGUSR2) {
    std::fprintf(stderr, "rill: --force goes with -s upgrade only\n");
    return 2;
  }
  std::string pid_path;
  if (opts.pid_file) {
    pid_path = *opts.pid_file;
  } else {
    try {
      auto cfg = rill::process::load_master_config(opts);
      if (!cfg.pid_file) {
        std::fprintf(stderr,
                     "rill: no pid file: set pid_file in %s or pass -p PIDFILE\n",
                     cfg.source_name.c_str());
        return 1;
      }
      pid_path = *cfg.pid_file;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
  }
  std::string err;
  auto pid = rill::process::read_pid_file(pid_path, &err);
  if (!pid) {
    std::fprintf(stderr, "rill: %s (is rill running?)\n", err.c_str());
    return 1;
  }
  // An upgrade is sent with sigqueue: the master answers its outcome to this pid, and --force
  // rides on the value. The answer's signal is blocked first, so it cannot come too early.
  const bool upgrade = *sig == SIGUSR2;
  sigset_t answer;
  sigemptyset(&answer);
  sigaddset(&answer, rill::process::upgrade_outcome_signal());
  if (upgrade) sigprocmask(SIG_BLOCK, &answer, nullptr);
  sigval value{};
  value.sival_int = force ? rill::process::kUpgradeForceValue : 0;
  if ((upgrade ? ::sigqueue(*pid, *sig, value) : ::kill(*pid, *sig)) != 0) {
    if (errno == ESRCH)
      std::fprintf(stderr, "rill: no process with pid %d (stale pid file %s?)\n", static_cast<int>(*pid),
                   pid_path.c_str());
    else
      std::fprintf(stderr, "rill: cannot send %s to pid %d: %s\n", rill::process::signal_name(*sig).c_str(),
                   static_cast<int>(*pid), std::strerror(errno));
    return 1;
  }
  return upgrade ? wait_upgrade_outcome(*pid, answer, pid_path) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "token") == 0) {
    return rill::server::run_token_command(argc - 1, argv + 1, stdout, stderr);
  }
  rill::process::proctitle_init(argc, argv);

  static const option long_options[] = {
      {"config", required_argument, nullptr, 'c'}, {"test", no_argument, nullptr, 't'},
      {"signal", required_argument, nullptr, 's'}, {"pid-file", required_argument, nullptr, 'p'},
      {"version", no_argument, nullptr, 'v'},      {"help", no_argument, nullptr, 'h'},
      {"force", no_argument, nullptr, 'F'},        {nullptr, 0, nullptr, 0},
  };
  rill::process::MasterOptions opts;
  opts.binary = rill::process::own_executable_path(argv[0]);
  bool test = false, version = false, help = false, force = false;
  std::optional<std::string> signal_command;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":c:ts:p:vh", long_options, nullptr)) != -1) {
    switch (c) {
      case 'c': opts.config_path = absolute_path(optarg); break;
      case 't': test = true; break;
      case 's': signal_command = optarg; break;
      case 'p': opts.pid_file = absolute_path(optarg); break;
      case 'v': version = true; break;
      case 'h': help = true; break;
      case 'F':
        force = true;
        break;
      case ':':
        std::fprintf(stderr, "rill: option '%s' needs an argument\n", argv[optind - 1]);
        usage(stderr);
        return 2;
      default:
        std::fprintf(stderr, "rill: unknown option '%s'\n", argv[optind - 1]);
        usage(stderr);
        return 2;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "rill: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 2;
  }
  if (help) {
    usage(stdout);
    return 0;
  }
  if (version) {
    print_versions();
    return 0;
  }
  if (test && signal_command) {
    std::fprintf(stderr, "rill: -t and -s cannot be combined\n");
    return 2;
  }
  if (test) return test_config(opts);
  if (signal_command) return send_signal(opts, *signal_command, force);
  if (force) {
    std::fprintf(stderr, "rill: --force goes with -s upgrade only\n");
    return 2;
  }

  try {
    rill::process::Master master(std::move(opts));
    return master.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rill: %s\n", e.what());
    return 1;
  }
}
