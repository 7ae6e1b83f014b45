// A worker, right after the master forked it (the process design: include/rill/process/master.h)
//   PR_SET_PDEATHSIG(SIGTERM) then getppid() check (the master may already be gone); signal
//   dispositions reset (signals stay blocked until the worker's handlers exist, so nothing
//   sent right after fork is lost); close the other slots' sockets, the pid file and the
//   master's log; title "rill: worker N" (argv overwritten + PR_SET_NAME); open its own log
//   ("[worker N]"); drop privileges to `user` (initgroups/setgid/setuid; the death signal is
//   set again since a credential change clears it); event_base + server::Worker(base, ctx),
//   start(); libevent signal events: SIGTERM/SIGINT -> stop_now() then loopexit (once the
//   recordings it closed are reported, at most shutdown_timeout / 2),
//   SIGQUIT -> drain(loopexit) with a hard shutdown_timeout timer, SIGUSR2 -> retire (a
//   reload: server/worker_retirement.h), SIGUSR1 -> reopen logs,
//   SIGHUP and SIGPIPE ignored. Second guard against an orphaned worker: the read end of a
//   pipe whose only write end the master holds; EOF means the master is gone -> stop_now.
//   The worker ends with _exit() (never runs the master's destructors or flushes its stdio).
//   Listening sockets stay close-on-exec in the worker too: only the master's binary upgrade
//   clears it, in the child that execs the new master; a program a worker may exec one day
//   must not inherit them.
#include "rill/process/worker_process.h"

#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "rill/core/log.h"
#include "rill/process/memory_policy.h"
#include "rill/process/proctitle.h"
#include "rill/process/signals.h"
#include "rill/server/worker.h"

namespace rill::process {
namespace {

struct WorkerState {
  event_base* base = nullptr;
  std::unique_ptr<server::Worker> worker;
  std::shared_ptr<spdlog::logger> log;
  std::shared_ptr<spdlog::logger> access_log;
  config::Duration shutdown_timeout{0};
  event* drain_timer = nullptr;
  bool draining = false;
  bool retiring = false;
  bool stopping = false;
};

// The loop goes on until the recordings the stop closed are reported (on_record_done), for at
// most `reports_for`: within the master's bound, after which it SIGKILLs the worker.
void stop_now(WorkerState& st, const char* why, std::chrono::milliseconds reports_for) {
  if (st.stopping) return;
  st.stopping = true;
  st.log->info("{}: closing {} session(s) and exiting", why, st.worker->session_count());
  st.worker->stop_now(reports_for, [&st] { event_base_loopexit(st.base, nullptr); });
}

// A fast stop: the master SIGKILLs what is left after shutdown_timeout; half of it for the reports.
void stop_now(WorkerState& st, const char* why) {
  stop_now(st, why, std::chrono::milliseconds(st.shutdown_timeout.count() / 2));
}

void on_drain_timeout(evutil_socket_t, short, void* arg) {
  auto& st = *static_cast<WorkerState*>(arg);
  st.log->warn("drain not finished after {} ms", st.shutdown_timeout.count());
  // The master's SIGKILL of a graceful stop comes 1 s after shutdown_timeout.
  stop_now(st, "shutdown_timeout reached", std::chrono::milliseconds(500));
}

void on_signal(evutil_socket_t sig, short, void* arg) {
  auto& st = *static_cast<WorkerState*>(arg);
  switch (sig) {
    case SIGTERM:
    case SIGINT:
      stop_now(st, (signal_name(static_cast<int>(sig)) + " received").c_str());
      break;
    case SIGQUIT: {
      if (st.draining || st.stopping) return;
      st.draining = true;
      st.log->info("SIGQUIT received: graceful stop, draining {} session(s) (at most {} ms)",
                   st.worker->session_count(), st.shutdown_timeout.count());
      st.drain_timer = evtimer_new(st.base, on_drain_timeout, &st);
      timeval tv{static_cast<time_t>(st.shutdown_timeout.count() / 1000),
                 static_cast<suseconds_t>((st.shutdown_timeout.count() % 1000) * 1000)};
      evtimer_add(st.drain_timer, &tv);
      st.worker->drain([&st] {
        if (st.stopping) return;
        st.stopping = true;
        st.log->info("drained, exiting");
        event_base_loopexit(st.base, nullptr);
      });
      break;
    }
    case SIGUSR2: {
      // A reload: a new generation serves new clients; ours keep their worker (no deadline for
      // live media; idle sessions end after shutdown_timeout).
      if (st.retiring || st.draining || st.stopping) return;
      st.retiring = true;
      st.log->info("SIGUSR2 received: retiring after a reload, keeping {} session(s) while they carry media",
                   st.worker->session_count());
      st.worker->retire(std::chrono::milliseconds(st.shutdown_timeout.count()), [&st] {
        if (st.stopping) return;
        st.stopping = true;
        st.log->info("retired: no session left, exiting");
        event_base_loopexit(st.base, nullptr);
      });
      break;
    }
    case SIGUSR1: {
      std::string err;
      bool ok = core::reopen_log_files(*st.log, &err);
      if (st.access_log && !core::reopen_log_files(*st.access_log, ok ? &err : nullptr)) ok = false;
      if (ok)
        st.log->info("log files reopened");
      else
        st.log->error("reopening log files failed: {}", err);
      break;
    }
    default:
      break;
  }
}

void on_master_pipe(evutil_socket_t fd, short, void* arg) {
  auto& st = *static_cast<WorkerState*>(arg);
  char buf[64];
  ssize_t n = ::read(static_cast<int>(fd), buf, sizeof(buf));
  if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR))) return;
  stop_now(st, "master process is gone");
}

void set_death_signal(pid_t master_pid) {
  ::prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
  if (::getppid() != master_pid) _exit(kWorkerExitOk);  // the master died before we got here
}

void prepare_worker_process(int slot) {
  reset_signals_for_worker();
  set_proctitle("rill: worker " + std::to_string(slot));
  apply_worker_malloc_policy();
}

server::WorkerContext worker_context(const WorkerProcessParams& p, const WorkerState& st) {
  server::WorkerContext ctx;
  ctx.id = p.slot;
  ctx.generation = p.generation;
  ctx.config = p.config;
  ctx.listeners = p.listeners;  // and the counters they report, shared with the master:
  ctx.counters = p.counters;
  ctx.log = st.log;
  ctx.access_log = st.access_log;
  ctx.ownership = p.ownership;
  ctx.workers = p.workers;
  return ctx;
}

}  // namespace

void run_worker_process(WorkerProcessParams p) {
  set_death_signal(p.master_pid);
  prepare_worker_process(p.slot);

  WorkerState st;
  try {
    st.log = core::make_logger("rill", p.config->log, p.slot);
    st.access_log = core::make_access_logger(p.config->log);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rill: worker %d: %s\n", p.slot, e.what());
    _exit(kWorkerExitError);
  }
  st.shutdown_timeout = p.config->shutdown_timeout;
  int rc = kWorkerExitOk;
  try {
    if (p.user) {
      drop_privileges(*p.user);
      set_death_signal(p.master_pid);  // changing credentials clears the parent-death signal
    }
    if (p.master_pipe_fd >= 0)
      ::fcntl(p.master_pipe_fd, F_SETFL, ::fcntl(p.master_pipe_fd, F_GETFL) | O_NONBLOCK);

    st.base = event_base_new();
    if (!st.base) throw std::runtime_error("event_base_new failed");

    st.worker = std::make_unique<server::Worker>(st.base, worker_context(p, st));
    st.worker->start();
    // Freed memory goes back to the system: glibc needs the trimmer; jemalloc purges by itself.
    auto trimmer = glibc_malloc() ? std::make_unique<HeapTrimmer>(st.base) : nullptr;

    std::vector<event*> events;
    for (int sig : {SIGTERM, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2}) {
      event* ev = evsignal_new(st.base, sig, on_signal, &st);
      if (!ev || evsignal_add(ev, nullptr) != 0) throw std::runtime_error("cannot install signal events");
      events.push_back(ev);
    }
    if (p.master_pipe_fd >= 0) {
      event* ev = event_new(st.base, p.master_pipe_fd, EV_READ | EV_PERSIST, on_master_pipe, &st);
      if (!ev || event_add(ev, nullptr) != 0) throw std::runtime_error("cannot watch the master pipe");
      events.push_back(ev);
    }
    // Handlers are in place: let pending and future signals in.
    unblock_all_signals();

    size_t rtmp = 0, http = 0;
    for (const net::ListenSocket& l : p.listeners) {
      rtmp += l.service == net::ListenService::Rtmp;
      http += l.service == net::ListenService::Http;
    }
    st.log->info("worker process started (pid {}, generation {}, {} rtmp + {} http listener(s){})",
                 ::getpid(), p.generation, rtmp, http, p.user ? ", user " + p.user->name : std::string());

    if (event_base_dispatch(st.base) < 0) {
      st.log->error("event loop failed");
      rc = kWorkerExitError;
    }

    for (event* ev : events) event_free(ev);
    if (st.drain_timer) event_free(st.drain_timer);
    st.worker.reset();
    trimmer.reset();
    event_base_free(st.base);
    st.log->info("worker process exiting");
  } catch (const std::exception& e) {
    st.log->critical("worker {} failed: {}", p.slot, e.what());
    rc = kWorkerExitError;
  } catch (...) {
    st.log->critical("worker {} failed: unknown exception", p.slot);
    rc = kWorkerExitError;
  }
  st.log->flush();
  // _exit: no atexit handlers and no stdio flushing of buffers inherited from the master.
  _exit(rc);
}

}  // namespace rill::process
