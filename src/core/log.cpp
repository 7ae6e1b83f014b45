#include "rill/core/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace rill::core {
namespace {

int open_append(const std::string& path, std::string* error) {
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // open() reports failure
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0 && error) *error = "cannot open log file " + path + ": " + std::strerror(errno);
  return fd;
}

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // nowhere to report a failing log; drop the line
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// An append-only file sink that writes each formatted line with one write(2) (no stdio
// buffer: nothing to flush, nothing duplicated across fork) and can be reopened by path.
class AppendFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit AppendFileSink(std::string path) : path_(std::move(path)) {
    std::string error;
    fd_ = open_append(path_, &error);
    if (fd_ < 0) throw std::runtime_error(error);
  }
  ~AppendFileSink() override {
    if (fd_ >= 0) ::close(fd_);
  }

  bool reopen(std::string* error) {
    std::lock_guard<std::mutex> lock(mutex_);
    int fd = open_append(path_, error);
    if (fd < 0) return false;
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
    return true;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    write_all(fd_, buf.data(), buf.size());
  }
  void flush_() override {}

 private:
  std::string path_;
  int fd_ = -1;
};

std::string prefix_pattern(int worker_id, bool with_level) {
  std::string p = "[%Y-%m-%d %H:%M:%S.%e] ";
  if (with_level) p += "[%l] ";
  // Appended piecewise: `"[" + std::string&&` trips GCC 12's -Wrestrict false positive (PR105329).
  p += '[';
  p += log_role(worker_id);
  p += "] %v";
  return p;
}

}  // namespace

std::string log_role(int worker_id) {
  return worker_id < 0 ? std::string("master") : "worker " + std::to_string(worker_id);
}

spdlog::level::level_enum parse_log_level(const std::string& text) {
  using L = spdlog::level::level_enum;
  if (text == "trace") return L::trace;
  if (text == "debug") return L::debug;
  if (text == "info") return L::info;
  if (text == "warn" || text == "warning") return L::warn;
  if (text == "error" || text == "err") return L::err;
  if (text == "critical") return L::critical;
  if (text == "off") return L::off;
  throw std::invalid_argument("unknown log level '" + text +
                              "' (expected trace, debug, info, warn, error, critical or off)");
}

std::shared_ptr<spdlog::logger> make_logger(const std::string& name, const LogConfig& cfg,
                                            int worker_id) {
  spdlog::sink_ptr sink;
  if (cfg.file && !cfg.file->empty())
    sink = std::make_shared<AppendFileSink>(*cfg.file);
  else
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(name, std::move(sink));
  logger->set_pattern(prefix_pattern(worker_id, true));
  logger->set_level(parse_log_level(cfg.level));
  logger->flush_on(spdlog::level::trace);
  return logger;
}

std::shared_ptr<spdlog::logger> make_access_logger(const LogConfig& cfg, int worker_id) {
  if (!cfg.access_log || cfg.access_log->empty()) return nullptr;
  auto logger = std::make_shared<spdlog::logger>("access",
                                                 std::make_shared<AppendFileSink>(*cfg.access_log));
  logger->set_pattern(prefix_pattern(worker_id, false));
  logger->set_level(spdlog::level::info);
  return logger;
}

std::shared_ptr<spdlog::logger> make_null_logger(const std::string& name) {
  auto logger = std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::null_sink_mt>());
  logger->set_level(spdlog::level::off);
  return logger;
}

bool reopen_log_files(spdlog::logger& logger, std::string* error) {
  bool ok = true;
  for (auto& sink : logger.sinks()) {
    if (auto* f = dynamic_cast<AppendFileSink*>(sink.get())) {
      std::string e;
      if (!f->reopen(&e)) {
        if (ok && error) *error = e;
        ok = false;
      }
    }
  }
  return ok;
}

bool prepare_log_files(const LogConfig& cfg, int uid, int gid, std::string* error) {
  for (const auto* path : {&cfg.file, &cfg.access_log}) {
    if (!*path || (*path)->empty()) continue;
    int fd = open_append(**path, error);
    if (fd < 0) return false;
    if ((uid != -1 || gid != -1) &&
        ::fchown(fd, static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0) {
      if (error) *error = "cannot chown log file " + **path + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    ::close(fd);
  }
  return true;
}

}  // namespace rill::core
