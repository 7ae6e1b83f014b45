#include "rill/server/record_reports.h"

#include <event2/event.h>
#include <fmt/format.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "rill/core/stream_log.h"
#include "rill/protocol/percent_coding.h"
#include "rill/workers/record_view.h"

namespace rill::server {

RecordReports::RecordReports(event_base* base, net::Resolver* resolver,
                             std::shared_ptr<const config::Config> config, spdlog::logger& log)
    : config_(std::move(config)), log_(log), client_(base, resolver) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::runtime_error(std::string("record reports: eventfd: ") + std::strerror(errno));
  wake_ev_ = event_new(base, wake_fd_, EV_READ | EV_PERSIST, &RecordReports::on_wake, this);
  event_add(wake_ev_, nullptr);
}

RecordReports::~RecordReports() {
  if (wake_ev_) event_free(wake_ev_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void RecordReports::closed(record::RecordFilePtr file) {
  {
    std::lock_guard lock(mu_);
    inbox_.push_back(std::move(file));
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);  // the counter only grows: never full in practice
}

bool RecordReports::idle() {
  {
    std::lock_guard lock(mu_);
    if (!inbox_.empty()) return false;
  }
  return client_.pending() == 0;
}

void RecordReports::on_wake(int fd, short, void* arg) {
  auto* self = static_cast<RecordReports*>(arg);
  uint64_t n = 0;
  (void)!::read(fd, &n, sizeof n);
  std::vector<record::RecordFilePtr> files;
  {
    std::lock_guard lock(self->mu_);
    files.swap(self->inbox_);
  }
  if (self->on_wake_) self->on_wake_();
  for (const auto& f : files) self->report(*f);
}

void RecordReports::report(const record::RecordFile& file) {
  const record::RecordCloseNote& note = file.note();
  if (note.app.empty()) return;
  const std::string label = "record " + note.app + "/" + note.name;
  const core::StreamLog log(log_, note.app + "/" + note.name);
  if (file.written() == 0) {
    log.debug("{}: {} was never written ({}): no on_record_done", label, file.path(), note.reason);
    return;
  }
  if (exec_hook_) exec_hook_(note.app, note.name, file.path());
  const config::AppConfig* app = config_->find_app(note.app);
  if (!app || !app->callbacks.on_record_done) return;
  const std::string url = *app->callbacks.on_record_done;
  client_.post(
      url, record_done_form(file), app->callbacks.timeout,
      [log, label, url, path = file.path()](int status, std::string, std::string failure) {
        if (status >= 200 && status < 300) return;
        log.warn("{}: on_record_done {} for {}: {}", label, url, path,
                 status == 0 ? failure : "answered " + std::to_string(status));
      },
      app->callbacks.tls_ca_file.value_or(std::string()));
}

std::string record_done_form(const record::RecordFile& file) {
  const record::RecordCloseNote& note = file.note();
  const std::pair<const char*, std::string> fields[] = {
      {"call", "record_done"},
      {"app", note.app},
      {"name", note.name},
      {"path", file.path()},
      {"start", workers::rfc3339_utc(note.started)},
      {"duration", fmt::format("{:.3f}", note.duration_ms / 1000.0)},
      {"bytes", std::to_string(file.written())},
      {"reason", note.reason},
  };
  std::string form;
  for (const auto& [k, v] : fields) {
    if (!form.empty()) form += '&';
    form += k;
    form += '=';
    form += protocol::percent_encode(v);
  }
  return form;
}

}  // namespace rill::server
