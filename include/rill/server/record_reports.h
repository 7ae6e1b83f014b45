#pragma once
// RecordReports: what a worker does when one of its recording files is closed (rotation,
// unpublish, the API's stop, a failure, shutdown) — the app's callbacks.on_record_done, a POST of
// nginx-rtmp's form (call=record_done, app, name, path) with start (RFC 3339), duration (s),
// bytes and reason (docs/recording.md).
//
// The close is carried out on the record::FileWriter thread, which knows the file's final size;
// closed() is called there, queues the file and wakes the worker's loop through an eventfd; the
// callbacks are sent from the loop. A file that holds nothing (it could not be created) is
// reported in the log only. A callback that fails is logged, never retried. A fast stop keeps
// the loop running, for a bounded time, until idle() (server/worker.h, Worker::stop_now).
#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "rill/config/config.h"
#include "rill/http/http_callback_client.h"
#include "rill/record/file_writer.h"

struct event;
struct event_base;

namespace rill::server {

class RecordReports {
 public:
  // `config` and `resolver` outlive this object. Throws std::runtime_error without an eventfd.
  RecordReports(event_base* base, net::Resolver* resolver, std::shared_ptr<const config::Config> config,
                spdlog::logger& log);
  ~RecordReports();
  RecordReports(const RecordReports&) = delete;
  RecordReports& operator=(const RecordReports&) = delete;

  // On the writer thread (record::FileWriterOptions::on_closed).
  void closed(record::RecordFilePtr file);
  // True when no closed file waits to be reported and no on_record_done call is in flight.
  bool idle();
  size_t calls_in_flight() const { return client_.pending(); }

  // Also told of each reported file, on the loop (APP, NAME, path): the record_done exec hooks.
  using ExecHook = std::function<void(const std::string&, const std::string&, const std::string&)>;
  void set_exec_hook(ExecHook hook) { exec_hook_ = std::move(hook); }
  // Called on the loop each time the writer thread hands closed files back, before they are
  // reported: the worker releases there what the writer keeps of written bytes
  // (record::FileWriter::release_written), so that nothing stays held after the last close.
  void set_on_wake(std::function<void()> f) { on_wake_ = std::move(f); }

 private:
  static void on_wake(int fd, short, void* arg);
  void report(const record::RecordFile& file);

  std::shared_ptr<const config::Config> config_;
  spdlog::logger& log_;
  http::HttpCallbackClient client_;
  ExecHook exec_hook_;
  std::function<void()> on_wake_;
  int wake_fd_ = -1;
  event* wake_ev_ = nullptr;
  std::mutex mu_;
  std::vector<record::RecordFilePtr> inbox_;  // guarded by mu_
};

// The form of one on_record_done call (application/x-www-form-urlencoded).
std::string record_done_form(const record::RecordFile& file);

}  // namespace rill::server
