#pragma once
// ExecHooks: the apps' `exec` commands (docs/abr.md) run by the worker that owns a stream. A
// publish hook's child runs while the stream is published and is started again after it exits
// (apps.NAME.exec[].restart, back-off doubling to 30 s); publish_done and record_done hooks run
// once. Each child's output is logged line by line under its stream's name (20 lines/s, then a
// count of the lines left out). When the stream ends its children are stopped: SIGTERM to the
// process group, SIGKILL after 5 s. When the worker goes they go too (SIGKILL here, and
// PR_SET_PDEATHSIG for a worker killed outright). exec_max caps the children alive at once.
#include <event2/event.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rill/config/exec_config.h"
#include "rill/media/stream_key.h"
#include "rill/net/worker_core.h"
#include "rill/server/exec_schedule.h"
#include "rill/server/stream_gate.h"

namespace rill::server {

// One child as the API shows it (GET /api/v1/streams/{app}/{name}).
struct ExecChildView {
  int pid = 0;  // 0: waiting to be started again
  std::string on;
  std::vector<std::string> command;
  std::string started;  // RFC 3339 (UTC) of the current run, or of the last one
  uint32_t restarts = 0;
  std::string last_exit;  // "" before the first exit
};

// The API's "exec" list of a stream.
nlohmann::json exec_children_json(const std::vector<ExecChildView>& children);

class ExecHooks {
 public:
  explicit ExecHooks(net::WorkerCore& ctx);
  ~ExecHooks();  // kills every child's group and reaps it
  ExecHooks(const ExecHooks&) = delete;
  ExecHooks& operator=(const ExecHooks&) = delete;

  // The gate's view of publishes: runs the publish hooks of admitted RTMP publishes, and stops
  // them and runs the publish_done hooks when the publisher leaves. Owned by the gate; `this`
  // outlives it.
  std::unique_ptr<AdmissionCheck> gate_check();

  // A recording file of APP/NAME was closed: its record_done hooks.
  void record_done(const std::string& app, const std::string& name, const std::string& path);

  std::vector<ExecChildView> children_of(const media::StreamKey& key) const;
  size_t alive() const { return alive_; }
  uint64_t restarts_total() const { return restarts_total_; }

  // Used by the gate check.
  void published(const config::AppConfig& app, const config::ExecVars& vars);
  void publish_ended(const media::StreamKey& key);

 private:
  struct Child;

  void run_hooks(const config::AppConfig& app, config::ExecEvent on, const config::ExecVars& vars);
  void start(Child& c);
  void stop(Child& c);
  static void on_exit_event(evutil_socket_t, short, void* arg);
  static void on_output_event(evutil_socket_t, short, void* arg);
  void exited(Child& c);
  void read_output(Child& c, bool to_end);
  void log_line(Child& c, const std::string& line);
  void close_fds(Child& c);
  void erase(Child& c);

  net::WorkerCore& ctx_;
  std::map<uint64_t, std::unique_ptr<Child>> children_;
  uint64_t next_id_ = 1;
  size_t alive_ = 0;
  uint64_t restarts_total_ = 0;
};

}  // namespace rill::server
