#pragma once
// The recording files of an app as they lie on disk: where an app's files are (its root), which
// files are there, and which of them are being written (record::FileWriter holds flock(LOCK_EX) on
// a file from its open to its close; the kernel drops the lock of a process that died, so an
// unlocked file is complete or a leftover).
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "rill/protocol/recording_index.h"

namespace rill::config {
struct Config;
}

namespace rill::record {

// The directory under which every file of `app` lies: the directory part of the path template
// before its first placeholder other than {app}, which is filled in ("/rec/{app}/{name}/{start}"
// gives "/rec/live" for app "live"; "{{" and "}}" are braces).
std::string recording_root(const std::string& path_template, const std::string& app);

struct RecordingRoot {
  std::string app;
  std::string dir;
};
// One per app that records (record.mode other than off).
std::vector<RecordingRoot> recording_roots(const config::Config& cfg);

struct RecordingFileInfo {
  std::string path;
  uint64_t bytes = 0;
  std::time_t mtime = 0;
  int64_t mtime_ns = 0;  // with the nanoseconds: what a cache keys on
  protocol::RecordingFormat format = protocol::RecordingFormat::Unknown;  // by the extension
  bool locked = false;                                                    // being written
};

inline constexpr size_t kMaxRecordingFiles = 100000;  // per root and scan
inline constexpr int kMaxRecordingDepth = 8;          // directories below the root

// Every .mp4 and .flv file under `root` (at most kMaxRecordingFiles, kMaxRecordingDepth deep; a
// missing root is empty). `error` says what could not be read, if anything.
std::vector<RecordingFileInfo> list_recording_files(const std::string& root, std::string& error);

// Feeds the index the first `size` bytes of the file open as `fd` (pread; what the index skips is
// seeked past, not read). An FLV whose onMetaData says a duration other than 0 was closed by its
// writer: with `stop_at_closed_flv` the read ends there. Returns "" or what went wrong (a read
// error, the index's ProtocolError); the index keeps what it read before.
std::string read_recording_index(int fd, uint64_t size, protocol::RecordingIndex& ix,
                                 bool stop_at_closed_flv);

// Whether another open file description holds a flock on the file open as `fd`.
bool locked_by_another(int fd);
// The same for a path (false when it cannot be opened).
bool recording_locked(const std::string& path);

}  // namespace rill::record
