#include "rill/server/exec_hooks.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "rill/core/address_counter.h"
#include "rill/core/child_process.h"
#include "rill/media/rendition_group.h"
#include "rill/workers/record_view.h"

namespace rill::server {

namespace {

constexpr std::chrono::milliseconds kStopGrace{5000};  // SIGTERM, then SIGKILL after this
constexpr size_t kMaxLine = 4096;                      // a longer line is logged in pieces

}  // namespace

struct ExecHooks::Child {
  ExecHooks* owner = nullptr;
  uint64_t id = 0;
  media::StreamKey key;
  config::ExecEvent on = config::ExecEvent::Publish;
  std::vector<std::string> argv;
  ExecDuration restart{0};  // 0: runs once
  ExecDuration delay{0};    // the back-off's last delay
  pid_t pid = -1;
  int pidfd = -1;
  int output = -1;
  event* exit_ev = nullptr;
  event* output_ev = nullptr;
  int64_t started_ms = 0;
  std::time_t started_wall = 0;
  uint32_t restarts = 0;
  std::string last_exit;
  TimerId restart_timer = 0;
  TimerId kill_timer = 0;
  bool stopping = false;
  std::string partial;  // output after the last newline
  ExecLineBudget budget;

  std::string label() const { return "exec " + key.app + "/" + key.name; }
};

namespace {

// The placeholders' values for a hook of stream `key` of `app`.
config::ExecVars exec_vars(const config::AppConfig& app, const media::StreamKey& key, std::string query,
                           std::string addr, std::string path) {
  const auto member = media::rendition_member(key.name, app.hls.variant_suffixes);
  return config::ExecVars{key.app,         key.name,        std::move(query),
                          std::move(addr), std::move(path), member ? member->group : key.name};
}

class ExecCheck final : public AdmissionCheck {
 public:
  explicit ExecCheck(ExecHooks& hooks) : hooks_(hooks) {}
  const char* name() const override { return "exec"; }
  bool applies(const AdmissionRequest&, GateAction) const override { return false; }  // never gates
  void check(const AdmissionRequest&, GateAction, Done done) override { done(std::nullopt); }
  void decided(const AdmissionRequest& req, GateAction action, const GateDecision& d) override {
    if (action != GateAction::Publish || d.verdict != Verdict::Admitted || req.probe) return;
    if (req.proto != GateProto::Rtmp || !d.app || d.app->exec.empty()) return;
    hooks_.published(*d.app,
                     exec_vars(*d.app, d.key, req.query, std::string(core::address_part(req.peer)), ""));
  }
  void publish_ended(const media::StreamKey& key) override { hooks_.publish_ended(key); }

 private:
  ExecHooks& hooks_;
};

}  // namespace

ExecHooks::ExecHooks(net::WorkerCore& ctx) : ctx_(ctx) {}

ExecHooks::~ExecHooks() {
  for (auto& [id, c] : children_) {
    ctx_.timers->cancel(c->restart_timer);
    ctx_.timers->cancel(c->kill_timer);
    if (c->pid > 0) {
      core::signal_child_group(c->pid, SIGKILL);
      ::waitpid(c->pid, nullptr, 0);  // SIGKILL: at once
    }
    close_fds(*c);
  }
}

std::unique_ptr<AdmissionCheck> ExecHooks::gate_check() { return std::make_unique<ExecCheck>(*this); }

void ExecHooks::published(const config::AppConfig& app, const config::ExecVars& vars) {
  run_hooks(app, config::ExecEvent::Publish, vars);
}

void ExecHooks::publish_ended(const media::StreamKey& key) {
  std::vector<Child*> ending;
  for (auto& [id, c] : children_) {
    if (c->key == key && c->on == config::ExecEvent::Publish && !c->stopping) ending.push_back(c.get());
  }
  for (Child* c : ending) stop(*c);
  const config::AppConfig* app = ctx_.config->find_app(key.app);
  if (app) run_hooks(*app, config::ExecEvent::PublishDone, exec_vars(*app, key, "", "", ""));
}

void ExecHooks::record_done(const std::string& app_name, const std::string& name, const std::string& path) {
  const config::AppConfig* app = ctx_.config->find_app(app_name);
  if (app)
    run_hooks(*app, config::ExecEvent::RecordDone,
              exec_vars(*app, media::StreamKey{app_name, name}, "", "", path));
}

void ExecHooks::run_hooks(const config::AppConfig& app, config::ExecEvent on, const config::ExecVars& vars) {
  for (const config::ExecHook& hook : app.exec) {
    if (hook.on != on || !config::exec_hook_applies(hook, vars.name, vars.query)) continue;
    auto c = std::make_unique<Child>();
    c->owner = this;
    c->id = next_id_++;
    c->key = media::StreamKey{vars.app, vars.name};
    c->on = on;
    for (const std::string& arg : hook.command) c->argv.push_back(config::expand_exec_arg(arg, vars));
    if (on == config::ExecEvent::Publish) c->restart = hook.restart;
    Child& ref = *c;
    children_.emplace(ref.id, std::move(c));
    start(ref);
  }
}

void ExecHooks::start(Child& c) {
  c.restart_timer = 0;
  const config::Config& cfg = *ctx_.config;
  const uint32_t workers = cfg.resolved_workers();
  const uint32_t share = exec_worker_share(cfg.exec_max, workers, static_cast<uint32_t>(ctx_.worker_id));
  if (alive_ >= share) {
    ctx_.log->warn(
        "{}: {} on {} refused: {} children are running, this worker's share of exec_max {} over {} workers",
        c.label(), c.argv[0], config::to_string(c.on), share, cfg.exec_max, workers);
    return erase(c);
  }
  core::SpawnedChild s;
  try {
    s = core::spawn_child(c.argv);
  } catch (const std::exception& e) {
    ctx_.log->error("{}: {}", c.label(), e.what());
    return erase(c);
  }
  c.pid = s.pid;
  c.pidfd = s.pidfd;
  c.output = s.output;
  c.started_ms = ctx_.timers->now_ms();
  c.started_wall = std::time(nullptr);
  ++alive_;
  c.exit_ev = event_new(ctx_.base, c.pidfd, EV_READ, &ExecHooks::on_exit_event, &c);
  c.output_ev = event_new(ctx_.base, c.output, EV_READ | EV_PERSIST, &ExecHooks::on_output_event, &c);
  event_add(c.exit_ev, nullptr);
  event_add(c.output_ev, nullptr);
  ctx_.log->info("{}: started {} on {} (pid {}, process group {})", c.label(), fmt::join(c.argv, " "),
                 config::to_string(c.on), c.pid, c.pid);
}

void ExecHooks::stop(Child& c) {
  c.stopping = true;
  if (c.pid <= 0) return erase(c);  // waiting for a restart: nothing runs
  ctx_.log->info("{}: stopping pid {} (SIGTERM to its process group)", c.label(), c.pid);
  core::signal_child_group(c.pid, SIGTERM);
  const uint64_t id = c.id;
  c.kill_timer = ctx_.timers->schedule(kStopGrace, [this, id] {
    auto it = children_.find(id);
    if (it == children_.end() || it->second->pid <= 0) return;
    it->second->kill_timer = 0;
    ctx_.log->warn("{}: pid {} still running {} s after SIGTERM: SIGKILL", it->second->label(),
                   it->second->pid, kStopGrace.count() / 1000);
    core::signal_child_group(it->second->pid, SIGKILL);
  });
}

void ExecHooks::on_exit_event(evutil_socket_t, short, void* arg) {
  auto* c = static_cast<Child*>(arg);
  c->owner->exited(*c);
}

void ExecHooks::on_output_event(evutil_socket_t, short, void* arg) {
  auto* c = static_cast<Child*>(arg);
  c->owner->read_output(*c, false);
}

void ExecHooks::exited(Child& c) {
  const int status = core::reap_child(c.pid);
  if (status < 0) return;  // not yet (cannot happen with a readable pidfd)
  read_output(c, true);
  const pid_t pid = c.pid;
  c.pid = -1;
  --alive_;
  close_fds(c);
  ctx_.timers->cancel(std::exchange(c.kill_timer, 0));
  c.last_exit = core::describe_wait_status(status);
  const ExecDuration ran_for{ctx_.timers->now_ms() - c.started_ms};
  if (c.stopping || c.restart.count() == 0) {
    ctx_.log->info("{}: pid {} {}", c.label(), pid, c.last_exit);
    return erase(c);
  }
  c.delay = exec_restart_delay(c.restart, c.delay, ran_for);
  ctx_.log->warn("{}: pid {} {} after {} ms: restarting in {} ms", c.label(), pid, c.last_exit,
                 ran_for.count(), c.delay.count());
  const uint64_t id = c.id;
  c.restart_timer = ctx_.timers->schedule(c.delay, [this, id] {
    auto it = children_.find(id);
    if (it == children_.end()) return;
    ++it->second->restarts;
    ++restarts_total_;
    start(*it->second);
  });
}

void ExecHooks::read_output(Child& c, bool to_end) {
  char buf[4096];
  for (int rounds = 0; c.output >= 0 && (to_end || rounds < 16); ++rounds) {
    const ssize_t n = ::read(c.output, buf, sizeof buf);
    if (n <= 0) {
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        // The pipe's end (the child and everything it started closed it): stop watching.
        if (c.output_ev) event_del(c.output_ev);
      }
      break;
    }
    c.partial.append(buf, static_cast<size_t>(n));
    size_t at = 0;
    for (size_t nl; (nl = c.partial.find('\n', at)) != std::string::npos; at = nl + 1) {
      log_line(c, c.partial.substr(at, nl - at));
    }
    c.partial.erase(0, at);
    while (c.partial.size() >= kMaxLine) {
      log_line(c, c.partial.substr(0, kMaxLine));
      c.partial.erase(0, kMaxLine);
    }
  }
  if (to_end && !c.partial.empty()) log_line(c, std::exchange(c.partial, std::string()));
}

void ExecHooks::log_line(Child& c, const std::string& line) {
  uint64_t suppressed = 0;
  const bool keep = c.budget.take(ctx_.timers->now_ms(), suppressed);
  if (suppressed)
    ctx_.log->warn("{} [{}]: suppressed {} lines (over 20 a second)", c.label(), c.pid, suppressed);
  if (keep) ctx_.log->info("{} [{}]: {}", c.label(), c.pid, line);
}

void ExecHooks::close_fds(Child& c) {
  if (c.exit_ev) event_free(std::exchange(c.exit_ev, nullptr));
  if (c.output_ev) event_free(std::exchange(c.output_ev, nullptr));
  if (c.pidfd >= 0) ::close(std::exchange(c.pidfd, -1));
  if (c.output >= 0) ::close(std::exchange(c.output, -1));
}

void ExecHooks::erase(Child& c) {
  close_fds(c);
  ctx_.timers->cancel(c.restart_timer);
  ctx_.timers->cancel(c.kill_timer);
  children_.erase(c.id);  // destroys `c`
}

std::vector<ExecChildView> ExecHooks::children_of(const media::StreamKey& key) const {
  std::vector<ExecChildView> out;
  for (const auto& [id, c] : children_) {
    if (!(c->key == key)) continue;
    out.push_back(ExecChildView{c->pid > 0 ? c->pid : 0, std::string(config::to_string(c->on)), c->argv,
                                c->started_wall ? workers::rfc3339_utc(c->started_wall) : "", c->restarts,
                                c->last_exit});
  }
  return out;
}

}  // namespace rill::server

namespace rill::server {

nlohmann::json exec_children_json(const std::vector<ExecChildView>& children) {
  nlohmann::json list = nlohmann::json::array();
  for (const ExecChildView& c : children) {
    list.push_back({{"pid", c.pid},
                    {"on", c.on},
                    {"command", c.command},
                    {"started", c.started},
                    {"restarts", c.restarts},
                    {"last_exit", c.last_exit}});
  }
  return list;
}

}  // namespace rill::server
