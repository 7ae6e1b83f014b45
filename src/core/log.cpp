#include "rill/core/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "rill/core/access_line.h"  // append_json_escaped
#include "rill/core/stream_log.h"

namespace rill::core {
namespace {

// Marks a line written through StreamLog: its source_loc's file is this very pointer and its
// logger name is the stream (spdlog's log_msg has no field for context of our own; the text
// pattern shows neither).
constexpr char kStreamLine[] = "stream";

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

// with_time false: under journald, which stamps every line itself.
std::string prefix_pattern(int worker_id, bool with_time) {
  std::string p = with_time ? "[%Y-%m-%d %H:%M:%S.%e] [%l] " : "[%l] ";
  // Appended piecewise: `"[" + std::string&&` trips GCC 12's -Wrestrict false positive (PR105329).
  p += '[';
  p += log_role(worker_id);
  p += "] %v";
  return p;
}

// log.format: json. One object per line:
//   {"time":"2026-11-30T12:00:00.123Z","level":"info","worker":1,"message":"..."}
// ("worker":null for the master; "stream":"app/name" before the message in a StreamLog line),
// every string escaped, so a line is always valid JSON.
class JsonLineFormatter final : public spdlog::formatter {
 public:
  explicit JsonLineFormatter(int worker_id) : worker_id_(worker_id) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto since_epoch = msg.time.time_since_epoch();
    const std::time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count();
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000;
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    char time[32];
    const size_t n = std::strftime(time, sizeof time, "%Y-%m-%dT%H:%M:%S", &tm);
    std::string line = "{\"time\":\"";
    line.append(time, n);
    line += fmt::format(".{:03}Z\",\"level\":\"", millis);
    const auto level = spdlog::level::to_string_view(msg.level);
    line.append(level.data(), level.size());
    line += "\",\"worker\":";
    line += worker_id_ < 0 ? std::string("null") : std::to_string(worker_id_);
    if (msg.source.filename == kStreamLine) {
      line += ",\"stream\":\"";
      append_json_escaped(line, std::string_view(msg.logger_name.data(), msg.logger_name.size()));
      line += '"';
    }
    line += ",\"message\":\"";
    append_json_escaped(line, std::string_view(msg.payload.data(), msg.payload.size()));
    line += "\"}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLineFormatter>(worker_id_);
  }

 private:
  int worker_id_;
};

// systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connects to stderr: when stderr
// is still that stream, the journal stamps every line, so ours would be doubled.
bool stderr_is_journal() {
  const char* env = std::getenv("JOURNAL_STREAM");
  if (!env) return false;
  struct stat st {};
  if (::fstat(STDERR_FILENO, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  return dev == static_cast<unsigned long long>(st.st_dev) &&
         ino == static_cast<unsigned long long>(st.st_ino);
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
  const bool to_journal = !(cfg.file && !cfg.file->empty()) && stderr_is_journal();
  auto logger = std::make_shared<spdlog::logger>(name, std::move(sink));
  if (cfg.json) {
    logger->set_formatter(std::make_unique<JsonLineFormatter>(worker_id));
  } else {
    logger->set_pattern(prefix_pattern(worker_id, !to_journal));
  }
  logger->set_level(parse_log_level(cfg.level));
  logger->flush_on(spdlog::level::trace);
  return logger;
}

std::shared_ptr<spdlog::logger> make_access_logger(const LogConfig& cfg) {
  if (!cfg.access_log || cfg.access_log->empty()) return nullptr;
  auto logger = std::make_shared<spdlog::logger>("access",
                                                 std::make_shared<AppendFileSink>(*cfg.access_log));
  logger->set_pattern("%v");  // the lines are whole (core/access_line.h): nginx-rtmp's or JSON
  logger->set_level(spdlog::level::info);
  return logger;
}

std::shared_ptr<spdlog::logger> make_null_logger(const std::string& name) {
  auto logger = std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::null_sink_mt>());
  logger->set_level(spdlog::level::off);
  return logger;
}

void StreamLog::log(spdlog::level::level_enum level, std::string_view message) const {
  if (!log_.should_log(level)) return;
  const spdlog::details::log_msg msg(spdlog::source_loc{kStreamLine, 0, nullptr},
                                     spdlog::string_view_t(stream_.data(), stream_.size()), level,
                                     spdlog::string_view_t(message.data(), message.size()));
  const bool flush = level >= log_.flush_level();
  for (auto& sink : log_.sinks()) {
    if (!sink->should_log(level)) continue;
    try {
      sink->log(msg);
      if (flush) sink->flush();
    } catch (const std::exception&) {
      // as spdlog's own logger does with a failing sink: the line is lost, the caller goes on
    }
  }
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
