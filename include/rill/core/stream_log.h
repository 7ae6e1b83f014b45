#pragma once
// The process log, scoped to one stream ("app/name"): what a publish, a play, a segmenter, a
// recorder or a relay logs about its stream. A text line reads exactly as the message is written
// (the messages name their stream themselves: "rtmp: 127.0.0.1:50000 publishing live/cam"); with
// log.format: json the line carries the stream as a field of its own as well:
//   {"time":"...","level":"info","worker":0,"stream":"live/cam","message":"rtmp: ... publishing live/cam"}
// A small value made where the stream is known (StreamLog(log, key.str()).info(...)); it writes
// to the logger's sinks, at the logger's level.
#include <fmt/format.h>
#include <spdlog/logger.h>

#include <string>
#include <string_view>
#include <utility>

namespace rill::core {

class StreamLog {
 public:
  StreamLog(spdlog::logger& log, std::string stream) : log_(log), stream_(std::move(stream)) {}

  template <typename... Args>
  void debug(fmt::format_string<Args...> f, Args&&... args) const {
    write(spdlog::level::debug, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void info(fmt::format_string<Args...> f, Args&&... args) const {
    write(spdlog::level::info, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void warn(fmt::format_string<Args...> f, Args&&... args) const {
    write(spdlog::level::warn, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void error(fmt::format_string<Args...> f, Args&&... args) const {
    write(spdlog::level::err, f, std::forward<Args>(args)...);
  }

  // One line (already formatted) at `level`.
  void log(spdlog::level::level_enum level, std::string_view message) const;

  const std::string& stream() const { return stream_; }

 private:
  template <typename... Args>
  void write(spdlog::level::level_enum level, fmt::format_string<Args...> f, Args&&... args) const {
    if (log_.should_log(level)) log(level, fmt::format(f, std::forward<Args>(args)...));
  }

  spdlog::logger& log_;
  std::string stream_;
};

}  // namespace rill::core
