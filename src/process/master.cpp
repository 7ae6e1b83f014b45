// The master process; the whole process design is the comment in include/rill/process/master.h.
#include "rill/process/master.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "rill/core/log.h"
#include "rill/core/version.h"
#include "rill/process/binary_upgrade.h"
#include "rill/process/close_out_process.h"
#include "rill/process/listeners.h"
#include "rill/process/notify.h"
#include "rill/process/pid_file.h"
#include "rill/process/privileges.h"
#include "rill/process/proctitle.h"
#include "rill/process/signals.h"
#include "rill/process/upgrade_coordinator.h"
#include "rill/process/worker_process.h"
#include "rill/record/close_out.h"
#include "rill/server/rtmps_context.h"
#include "rill/workers/ownership_table.h"
#include "rill/workers/server_counters.h"

namespace rill::process {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kQuickDeath{1000};      // a worker dying sooner than this "died quickly"
constexpr int kQuickDeathsBeforeBackoff = 3;   // respawn at once this many times in a row
constexpr milliseconds kBackoffFirst{100};
constexpr milliseconds kBackoffMax{10000};
constexpr milliseconds kStableLifetime{10000};  // resets the quick-death count
constexpr milliseconds kQuitGrace{1000};        // graceful stop: SIGKILL after timeout + this
constexpr milliseconds kForkRetry{1000};

long long ms(Clock::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

bool same_log_config(const config::LogConfig& a, const config::LogConfig& b) {
  return a.level == b.level && a.file == b.file && a.json == b.json && a.access_log == b.access_log;
}

}  // namespace

struct Master::Impl {
  struct Proc {
    uint32_t slot = 0;
    int generation = 0;
    Clock::time_point started;
    bool retiring = false;  // old generation (after a reload): drains and exits, not respawned
    std::optional<Clock::time_point> kill_at;
  };
  struct Slot {
    pid_t pid = 0;  // 0: no worker running
    int quick_deaths = 0;
    std::optional<Clock::time_point> respawn_at;
  };
  enum class StopMode { none, graceful, fast };

  MasterOptions opts;
  std::shared_ptr<const config::Config> cfg;
  std::shared_ptr<spdlog::logger> log;
  std::optional<UserIds> user;
  std::unique_ptr<PidFile> pid_file;
  Listeners listeners;
  std::unique_ptr<workers::OwnershipTable> ownership;  // shared with every worker (inherited)
  std::unique_ptr<workers::ServerCounters> counters;   // likewise: totals that survive a worker
  int pipe_r = -1;
  int pipe_w = -1;
  std::map<pid_t, Proc> procs;  // every live child
  std::vector<Slot> slots;      // the current generation
  int generation = 0;
  StopMode stop = StopMode::none;
  UpgradeCoordinator upgrade;  // SIGUSR2: a binary upgrade; once handed over, only retiring
  std::optional<Clock::time_point> stop_kill_at;
  pid_t self = 0;

  ~Impl() {
    if (pipe_r >= 0) ::close(pipe_r);
    if (pipe_w >= 0) ::close(pipe_w);
  }

  // ---- helpers -------------------------------------------------------------------------

  int uid() const { return user ? static_cast<int>(user->uid) : -1; }
  int gid() const { return user ? static_cast<int>(user->gid) : -1; }

  bool log_to_file() const { return cfg && cfg->log.file && !cfg->log.file->empty(); }

  // A startup failure: logged, and also printed to stderr when the log goes to a file (an
  // operator starting rill by hand must see why it did not start).
  int fatal(const std::string& msg) {
    if (log) log->critical("{}", msg);
    if (!log || log_to_file()) std::fprintf(stderr, "rill: %s\n", msg.c_str());
    return 1;
  }

  std::string status_line() const {
    return std::to_string(slots.size()) + " workers, generation " + std::to_string(generation);
  }

  void prepare_runtime_dir(const config::Config& c) {
    std::error_code ec;
    std::filesystem::create_directories(c.runtime_dir, ec);
    if (ec) {
      log->warn("cannot create runtime_dir {}: {}", c.runtime_dir, ec.message());
      return;
    }
    if (user && ::chown(c.runtime_dir.c_str(), user->uid, user->gid) != 0)
      log->warn("cannot chown runtime_dir {} to {}: {}", c.runtime_dir, user->name, std::strerror(errno));
  }

  // ---- startup -------------------------------------------------------------------------

  int run() {
    self = ::getpid();
    block_master_signals();

    try {
      cfg = std::make_shared<const config::Config>(load_master_config(opts));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rill: %s\n", e.what());
      return 1;
    }
    try {
      log = core::make_logger("rill", cfg->log, -1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rill: %s\n", e.what());
      return 1;
    }
    set_proctitle(opts.config_path ? "rill: master -c " + *opts.config_path : "rill: master");
    std::optional<UpgradeStart> upgrade;  // started by an old master's binary upgrade
    try {
      upgrade = take_upgrade_start(*log);
    } catch (const std::exception& e) {
      return fatal(e.what());
    }
    if (upgrade) generation = upgrade->handoff.generation + 1;

    const uint32_t n = cfg->resolved_workers();
    log->info("rill {} starting: configuration {}, {} worker{}", core::version(), cfg->source_name, n,
              n == 1 ? "" : "s");
    try {
      if (cfg->user) user = resolve_user(*cfg->user);
    } catch (const std::exception& e) {
      return fatal(e.what());
    }
    std::string err;
    if (!core::prepare_log_files(cfg->log, uid(), gid(), &err)) return fatal(err);
    prepare_runtime_dir(*cfg);

    if (cfg->pid_file) {
      try {
        pid_file = std::make_unique<PidFile>(*cfg->pid_file);
      } catch (const std::exception& e) {
        return fatal(e.what());
      }
    }

    raise_somaxconn(kListenBacklog, *log);
    if (upgrade)
      log->info("binary upgrade from rill {} (master pid {}): took over {} listening socket(s)",
                upgrade->handoff.version, upgrade->handoff.old_master,
                listeners.adopt(*cfg, upgrade->handoff.listeners, *log));
    try {
      listeners.reconcile(*cfg, n, *log);
    } catch (const std::exception& e) {
      return fatal(e.what());
    }

    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return fatal(std::string("pipe: ") + std::strerror(errno));
    pipe_r = p[0];
    pipe_w = p[1];

    try {
      map_shared_areas(upgrade ? &*upgrade : nullptr, ownership, counters);
    } catch (const std::exception& e) {
      return fatal(e.what());
    }

    // Leftover recordings of an earlier run, closed out before any worker writes (docs/recording.md).
    record::close_out_recordings(record::recording_roots(*cfg), 0, *log);

    slots.assign(n, Slot{});
    for (uint32_t i = 0; i < n; ++i) spawn(i);

    announce_ready(upgrade ? &*upgrade : nullptr);
    log->info("master started (pid {}, {})", self, status_line());
    return loop();
  }

  void announce_ready(const UpgradeStart* upgrade) {
    if (!upgrade) return notify::ready(status_line());
    // The old master tells systemd (MAINPID) and retires its workers; this one must not say READY
    // itself, it is not the unit's main process yet.
    if (!tell_old_master_ready(upgrade->handoff.old_master, upgrade->restart))
      log->warn("binary upgrade: cannot tell the old master (pid {}) that this one is ready: {}",
                upgrade->handoff.old_master, std::strerror(errno));
  }

  // ---- the loop ------------------------------------------------------------------------

  int loop() {
    const sigset_t set = master_signal_set();
    for (;;) {
      if ((stop != StopMode::none || upgrade.handed_over()) && procs.empty()) break;

      timespec ts = next_timeout();
      siginfo_t info{};
      int sig = ::sigtimedwait(&set, &info, &ts);
      if (sig > 0) {
        handle_signal(sig, info);
      } else if (errno != EAGAIN && errno != EINTR) {
        log->error("sigtimedwait: {}", std::strerror(errno));
        ::sleep(1);
      }
      run_timers();
    }

    listeners.close_all();
    pid_file.reset();  // removes the file
    log->info("master exiting");
    log->flush();
    return 0;
  }

  timespec next_timeout() const {
    std::optional<Clock::time_point> next = stop_kill_at;
    if (auto t = upgrade.deadline(); t && (!next || *t < *next)) next = t;
    auto consider = [&](const std::optional<Clock::time_point>& t) {
      if (t && (!next || *t < *next)) next = t;
    };
    for (const auto& s : slots) consider(s.respawn_at);
    for (const auto& [pid, p] : procs) consider(p.kill_at);
    long long wait_ms = 3600 * 1000;
    if (next) wait_ms = std::clamp<long long>(ms(*next - Clock::now()) + 1, 0, wait_ms);
    return timespec{static_cast<time_t>(wait_ms / 1000), static_cast<long>((wait_ms % 1000) * 1000000)};
  }

  void handle_signal(int sig, const siginfo_t& info) {
    if (sig != SIGCHLD)
      log->debug("{} received from pid {}", signal_name(sig), static_cast<int>(info.si_pid));
    switch (sig) {
      case SIGCHLD: reap(); break;
      case SIGHUP: reload(); break;
      case SIGTERM:
      case SIGINT: begin_stop(StopMode::fast, sig); break;
      case SIGQUIT: begin_stop(StopMode::graceful, sig); break;
      case SIGUSR1: reopen(); break;
      case SIGUSR2:
        // `rill -s upgrade` (sigqueue) waits for the outcome; systemd's or kill's sender is told nothing.
        start_upgrade(info.si_code == SI_QUEUE && info.si_value.sival_int == kUpgradeForceValue,
                      info.si_code == SI_QUEUE && info.si_pid > 1 ? info.si_pid : 0);
        break;
      case SIGWINCH:
        if (upgrade.ready(info.si_pid,
                          info.si_code == SI_QUEUE && info.si_value.sival_int == kUpgradeForceValue, *log))
          hand_over(info.si_value.sival_int == kUpgradeForceValue);
        break;
      default: break;
    }
  }

  void run_timers() {
    auto now = Clock::now();
    if (stop == StopMode::none) {
      for (uint32_t i = 0; i < slots.size(); ++i) {
        if (slots[i].respawn_at && *slots[i].respawn_at <= now) {
          slots[i].respawn_at.reset();
          spawn(i);
        }
      }
    }
    for (auto& [pid, p] : procs) {
      if (p.kill_at && *p.kill_at <= now) {
        p.kill_at.reset();
        log->warn("worker {} (pid {}, generation {}) still alive after shutdown_timeout; sending SIGKILL",
                  p.slot, pid, p.generation);
        ::kill(pid, SIGKILL);
      }
    }
    upgrade.on_timer(now, *log);
    if (stop_kill_at && *stop_kill_at <= now) {
      stop_kill_at.reset();
      for (auto& [pid, p] : procs) {
        log->warn("worker {} (pid {}) did not exit within shutdown_timeout; sending SIGKILL", p.slot, pid);
        ::kill(pid, SIGKILL);
      }
    }
  }

  // ---- workers -------------------------------------------------------------------------

  void spawn(uint32_t slot) {
    // Nothing buffered may be inherited (the child never flushes stdio: it ends with _exit).
    log->flush();
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) {
      log->error("cannot fork worker {}: {}; retrying in {} ms", slot, std::strerror(errno),
                 kForkRetry.count());
      slots[slot].pid = 0;
      slots[slot].respawn_at = Clock::now() + kForkRetry;
      return;
    }
    if (pid == 0) child(slot);  // never returns
    procs[pid] = Proc{slot, generation, Clock::now(), false, std::nullopt};
    slots[slot].pid = pid;
    slots[slot].respawn_at.reset();
    log->info("started worker {} (pid {}, generation {})", slot, pid, generation);
  }

  [[noreturn]] void child(uint32_t slot) {
    try {
      // Close everything that belongs to the master: the other slots' sockets, the pid file
      // (the lock stays with the master's descriptor), the write end of the master pipe and
      // the master's log file.
      listeners.close_except_slot(slot);
      if (pid_file) pid_file->close_in_child();
      ::close(pipe_w);
      log.reset();
      WorkerProcessParams params;
      params.slot = static_cast<int>(slot);
      params.generation = generation;
      params.config = cfg;
      params.listeners = listeners.for_slot(slot);
      params.counters = counters.get();
      params.master_pipe_fd = pipe_r;
      params.master_pid = self;
      params.user = user;
      params.ownership = ownership.get();
      params.workers = static_cast<uint32_t>(slots.size());
      run_worker_process(std::move(params));
    } catch (...) {
    }
    _exit(kWorkerExitError);
  }

  void reap() {
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid == 0) return;
      if (pid < 0) {
        if (errno == EINTR) continue;
        return;  // ECHILD: nothing left
      }
      on_child_exit(pid, status);
    }
  }

  void on_child_exit(pid_t pid, int status) {
    switch (upgrade.reaped(pid, status, pid_file.get(), *log)) {
      case UpgradeCoordinator::Exit::Failed:
        return;
      case UpgradeCoordinator::Exit::ServiceStopped:  // so do the retiring workers
        if (stop == StopMode::none) begin_stop(StopMode::fast, SIGTERM);
        return;
      case UpgradeCoordinator::Exit::SuccessorHandedOver: return;
      case UpgradeCoordinator::Exit::NotOurs:
        break;
    }
    auto it = procs.find(pid);
    if (it == procs.end()) {
      log->debug("reaped unknown child {} ({})", pid, describe_wait_status(status));
      return;
    }
    Proc p = it->second;
    procs.erase(it);
    // Its streams may be published again at once, on any worker.
    if (size_t released = ownership ? ownership->release_all_of(pid) : 0)
      log->info("released {} stream(s) owned by worker {} (pid {})", released, p.slot, pid);
    auto now = Clock::now();
    auto lifetime = now - p.started;
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    bool current = !p.retiring && p.slot < slots.size() && slots[p.slot].pid == pid;

    if (!current || stop != StopMode::none) {
      auto level = clean || (WIFSIGNALED(status) && stop == StopMode::fast && WTERMSIG(status) == SIGTERM)
                       ? spdlog::level::info
                       : spdlog::level::warn;
      log->log(level, "worker {} (pid {}, generation {}) {}", p.slot, pid, p.generation,
               describe_wait_status(status));
      if (current) slots[p.slot].pid = 0;
      return;
    }

    Slot& s = slots[p.slot];
    s.pid = 0;
    if (lifetime < kQuickDeath)
      ++s.quick_deaths;
    else if (lifetime > kStableLifetime)
      s.quick_deaths = 0;
    milliseconds delay{0};
    if (s.quick_deaths > kQuickDeathsBeforeBackoff) {
      int shift = std::min(s.quick_deaths - kQuickDeathsBeforeBackoff - 1, 16);
      delay = std::min<milliseconds>(kBackoffFirst * (1LL << shift), kBackoffMax);
    }
    log->error("worker {} (pid {}, generation {}) {} after {} ms; {}", p.slot, pid, p.generation,
               describe_wait_status(status), ms(lifetime),
               delay.count() == 0 ? std::string("respawning")
                                  : "respawning in " + std::to_string(delay.count()) + " ms (back-off: " +
                                        std::to_string(s.quick_deaths) + " quick deaths in a row)");
    counters->add(p.slot, workers::Counter::Respawns, 1);  // rill_worker_restarts_total
    if (pid_t c = fork_close_out(*cfg, now - p.started, *log, pid_file.get()); c < 0)
      log->warn("cannot fork the close-out of leftover recordings: {}", std::strerror(errno));
    if (delay.count() == 0)
      spawn(p.slot);
    else
      s.respawn_at = now + delay;
  }

  // ---- signals -------------------------------------------------------------------------

  void begin_stop(StopMode mode, int sig) {
    if (stop == StopMode::fast || (stop == StopMode::graceful && mode == StopMode::graceful)) {
      log->info("{} received: already stopping", signal_name(sig));
      return;
    }
    const bool fast = mode == StopMode::fast;
    if (stop == StopMode::none) notify::stopping();
    log->info("{} received: {} stop of {} worker process(es)", signal_name(sig), fast ? "fast" : "graceful",
              procs.size());
    stop = mode;
    upgrade.cancel();  // an upgrade in progress fails
    for (auto& s : slots) s.respawn_at.reset();
    for (auto& [pid, p] : procs) ::kill(pid, fast ? SIGTERM : SIGQUIT);
    auto deadline = Clock::now() + cfg->shutdown_timeout + (fast ? milliseconds{0} : kQuitGrace);
    if (!stop_kill_at || deadline < *stop_kill_at) stop_kill_at = deadline;
  }

  void reopen() {
    log->info("SIGUSR1 received: reopening log files");
    std::string err;
    if (!core::prepare_log_files(cfg->log, uid(), gid(), &err)) log->error("{}", err);
    if (!core::reopen_log_files(*log, &err))
      log->error("reopening the master log failed: {}", err);
    else
      log->info("log files reopened");
    for (auto& [pid, p] : procs) ::kill(pid, SIGUSR1);
  }

  void reload() {
    if (stop != StopMode::none) {
      log->info("SIGHUP received while stopping: ignored");
      return;
    }
    if (upgrade.new_master() || upgrade.handed_over()) {
      log->info("SIGHUP received during a binary upgrade: ignored (reload the new master)");
      return;
    }
    notify::reloading();
    log->info("SIGHUP received: reloading configuration from {}",
              opts.config_path ? *opts.config_path : std::string("<embedded default>"));

    std::shared_ptr<const config::Config> next;
    std::optional<UserIds> next_user;
    std::shared_ptr<spdlog::logger> next_log = log;
    uint32_t n = 0;
    try {
      next = std::make_shared<const config::Config>(load_master_config(opts));
      if (next->user) next_user = resolve_user(*next->user);
      if (!same_log_config(next->log, cfg->log)) next_log = core::make_logger("rill", next->log, -1);
      std::string err;
      if (!core::prepare_log_files(next->log, next_user ? static_cast<int>(next_user->uid) : -1,
                                   next_user ? static_cast<int>(next_user->gid) : -1, &err))
        throw std::runtime_error(err);
      n = next->resolved_workers();
      listeners.reconcile(*next, n, *log);  // last step that can fail; transactional
    } catch (const std::exception& e) {
      log->error("reload failed, keeping the running configuration: {}", e.what());
      notify::ready(status_line());
      return;
    }

    // Commit.
    if (next_log != log) {
      log->info("log configuration changed; continuing in {}", next->log.file.value_or("<stderr>"));
      log = next_log;
    }
    next_log.reset();  // `log` is the only reference left: a forked child closes it
    if (next->pid_file != cfg->pid_file) move_pid_file(next->pid_file);
    cfg = next;
    user = next_user;
    ++generation;
    prepare_runtime_dir(*cfg);

    std::vector<pid_t> old;
    for (auto& [pid, p] : procs)
      if (!p.retiring) old.push_back(pid);
    // Leftover recordings of an earlier run, closed out before any worker writes (docs/recording.md).
    record::close_out_recordings(record::recording_roots(*cfg), 0, *log);

    slots.assign(n, Slot{});
    for (uint32_t i = 0; i < n; ++i) spawn(i);
    // Old workers retire: no new clients, but their publishers and players stay as long as they
    // carry media (no deadline: a reload drops nothing); they exit once nothing is left.
    for (pid_t pid : old) {
      procs[pid].retiring = true;
      ::kill(pid, SIGUSR2);
    }
    log->info("configuration reloaded (generation {}): {} new worker(s) started, {} old worker(s) retiring",
              generation, n, old.size());
    notify::ready(status_line());
  }

  // SIGUSR2: exec the binary at its path with the listening sockets and the shared areas.
  void start_upgrade(bool force, pid_t requester) {
    if (stop != StopMode::none || upgrade.new_master() || upgrade.handed_over()) {
      log->warn("SIGUSR2 received: binary upgrade ignored ({})",
                stop != StopMode::none ? "stopping" : "an upgrade is in progress already");
      report_upgrade_outcome(requester, false);
      return;
    }
    const auto fds = ownership->shared_fds();
    const UpgradeHandoff h{worker_link_version(),
                           std::string(core::version()),
                           self,
                           generation,
                           force,
                           fds.table,
                           fds.hls_memo,
                           fds.stream_totals,
                           counters->shared_fd(),
                           listeners.handed_over()};
    std::vector<std::string> args{opts.binary};
    if (opts.config_path) args.insert(args.end(), {"-c", *opts.config_path});
    if (opts.pid_file) args.insert(args.end(), {"-p", *opts.pid_file});
    log->flush();
    upgrade.start(opts.binary, args, h, pid_file.get(), requester, *log);
  }

  // The new master is ready: this one's workers retire as in a reload (or stop, after a forced
  // restart), nothing is respawned, and the master exits after the last of them.
  void hand_over(bool restart) {
    slots.clear();
    for (auto& [pid, p] : procs) {
      p.retiring = true;
      ::kill(pid, restart ? SIGTERM : SIGUSR2);
    }
  }

  void move_pid_file(const std::optional<std::string>& path) {
    std::unique_ptr<PidFile> next;
    if (path) {
      try {
        next = std::make_unique<PidFile>(*path);
      } catch (const std::exception& e) {
        log->error("pid_file changed but the new one cannot be written ({}); keeping {}", e.what(),
                   pid_file ? pid_file->path() : std::string("none"));
        return;
      }
    }
    log->info("pid file moved from {} to {}", pid_file ? pid_file->path() : std::string("none"),
              path.value_or("none"));
    pid_file = std::move(next);  // the old one is removed
  }
};

Master::Master(MasterOptions opts) : impl_(std::make_unique<Impl>()) { impl_->opts = std::move(opts); }
Master::~Master() = default;
int Master::run() { return impl_->run(); }

}  // namespace rill::process
