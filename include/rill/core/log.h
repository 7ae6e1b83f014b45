#pragma once
// Logging setup. Every process (master, each worker) builds its own loggers from the `log:`
// section of the configuration and passes them down explicitly; library code never uses
// spdlog's global registry or default logger.
//
// Line format:  [2026-11-30 12:00:00.123] [info] [worker 1] message
//               [2026-11-30 12:00:00.123] [info] [master] message
// without the time when stderr is the journal (JOURNAL_STREAM), or with log.format: json
//               {"time":"2026-11-30T12:00:00.123Z","level":"info","worker":1,"message":"..."}
// Files are opened O_APPEND and every line is written with a single write(2), so the master
// and all workers can share one file without interleaving inside a line.
#include <memory>
#include <string>

#include <spdlog/common.h>
#include <spdlog/logger.h>

#include "rill/core/log_config.h"

namespace rill::core {

// "master" for worker_id < 0, "worker N" otherwise.
std::string log_role(int worker_id);

// "trace|debug|info|warn|warning|error|critical|off" -> level; throws std::invalid_argument.
spdlog::level::level_enum parse_log_level(const std::string& text);

// The process log: to cfg.file (created with its parent directories, appended to) or to stderr,
// at cfg.level. worker_id: the worker slot, or -1 for the master. Throws std::runtime_error
// ("cannot open log file PATH: reason") when the file cannot be opened.
std::shared_ptr<spdlog::logger> make_logger(const std::string& name, const LogConfig& cfg,
                                            int worker_id);

// The access log (one line per finished session/request, written at info level, each line
// rendered whole by core/access_line.h): null when cfg.access_log is unset.
std::shared_ptr<spdlog::logger> make_access_logger(const LogConfig& cfg);

// A logger that discards everything (tests, optional logging).
std::shared_ptr<spdlog::logger> make_null_logger(const std::string& name = "null");

// SIGUSR1: reopen every file this logger writes to, by path (after logrotate renamed them the
// old file is released and a new one is created). A file that cannot be reopened keeps the old
// descriptor; returns false and fills *error in that case. Safe on a null-sink/stderr logger.
bool reopen_log_files(spdlog::logger& logger, std::string* error = nullptr);

// Create (if missing) the files named by cfg.file / cfg.access_log and give them to uid:gid,
// so that workers running as an unprivileged user can (re)open them. Returns false and fills
// *error on failure. uid/gid of -1 leave the owner unchanged.
bool prepare_log_files(const LogConfig& cfg, int uid, int gid, std::string* error = nullptr);

}  // namespace rill::core
