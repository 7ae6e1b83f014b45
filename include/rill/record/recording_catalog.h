#pragma once
// RecordingCatalog: the recordings of the apps that record, from a scan of their roots
// (recording_files.h), for the API's listing and deletion and for retention. Blocking (it reads
// directories and files): it runs on a worker's BlockingWorkThread, never on its event loop, and
// is used from that one thread only.
//
// Per file:
//   - id: 16 hex digits of a 64-bit FNV-1a hash of "app/path-below-the-root": stable while the
//     file stays where it is, URL-safe, and resolved only through a scan (find()), so an id never
//     names a file outside the recording roots;
//   - name: the stream name, what the path template's {name} matched (empty when the file's path
//     does not match the template);
//   - start: the file's mtime (its last write) minus its duration. The name may not carry the
//     start ({start} is optional, and local time), and a file's birth time is not kept by every
//     file system; close-out keeps a fixed file's mtime, so the start stays right;
//   - duration: of the whole units (protocol/recording_index.h); a closed FLV's is its onMetaData
//     duration;
//   - state: recording (locked by its writer) or complete.
// Durations are cached by (path, size, mtime), so a listing rereads only what changed (a file
// being written); the cache is bounded (max_cached files).
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "rill/record/recording_files.h"

namespace rill::record {

struct RecordingEntry {
  std::string id;
  std::string app;
  std::string name;
  std::string path;
  double start = 0;  // Unix seconds
  double duration = 0;
  uint64_t bytes = 0;
  protocol::RecordingFormat format = protocol::RecordingFormat::Unknown;
  bool recording = false;  // being written
};

std::string recording_id(const std::string& app, const std::string& path_below_root);

// The stream name in `path` (a file under the app's root) as the app's path template places it;
// "" when the path does not match the template.
std::string recording_stream_name(const std::string& path_template, const std::string& app,
                                  const std::string& path);

class RecordingCatalog {
 public:
  struct App {
    RecordingRoot root;
    std::string path_template;
  };
  explicit RecordingCatalog(size_t max_cached = 8192) : max_cached_(max_cached) {}

  // Every recording of the app, oldest start first. `error` says what could not be read.
  std::vector<RecordingEntry> list(const App& app, std::string& error);
  // The recording with this id among the apps' (a fresh scan), if any.
  std::optional<RecordingEntry> find(const std::vector<App>& apps, const std::string& id);

 private:
  struct Cached {
    uint64_t bytes = 0;
    int64_t mtime_ns = 0;
    double duration = 0;
    bool playable = false;
  };
  Cached measure(const RecordingFileInfo& f);

  size_t max_cached_;
  std::unordered_map<std::string, Cached> cache_;
};

// The apps that record, as the catalog takes them.
std::vector<RecordingCatalog::App> catalog_apps(const config::Config& cfg);

enum class RemoveResult : uint8_t { Removed, BeingWritten, Gone, Failed };
// Removes a recording unless its writer holds it (the check and the unlink under its lock).
RemoveResult remove_recording(const std::string& path, std::string& error);

}  // namespace rill::record
