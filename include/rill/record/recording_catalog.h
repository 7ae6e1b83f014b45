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
//
// lookup() (GET /recordings/{id}/...) answers from an index of ids built by the last scan of the
// apps' roots instead of scanning for each request. It is rebuilt by a scan when this worker's
// writer opened or closed a file since (follow()), when a file was deleted here (invalidate():
// retention, the API), when it is older than kIndexTtlMs (files changed by other workers or by
// hand), and on a miss once it is older than kMissRescanMs (a file another worker opened: found
// within a second; ids nobody has cost one scan a second at most). A hit's `recording` is the
// writer's lock read again then (one open + flock), not the index's; a file gone since the scan is
// found by its reader (ENOENT).
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "rill/record/recording_changes.h"
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
  // The recording with this id among the apps' (a fresh scan, which renews the index), if any.
  std::optional<RecordingEntry> find(const std::vector<App>& apps, const std::string& id);
  // The same from the index (above), scanning only when it is out of date.
  std::optional<RecordingEntry> lookup(const std::vector<App>& apps, const std::string& id);
  static constexpr int64_t kIndexTtlMs = 5000;
  static constexpr int64_t kMissRescanMs = 1000;
  // The writer's count of opens and closes (null: none followed).
  void follow(std::shared_ptr<const RecordingChanges> changes) { changes_ = std::move(changes); }
  // Files under the roots changed on this thread (deleted): the next lookup scans.
  void invalidate() { indexed_ = false; }
  // For tests: the clock the index's age is read on (milliseconds; steady_clock by default).
  void set_clock(std::function<int64_t()> now_ms) { now_ms_ = std::move(now_ms); }

 private:
  struct Cached {
    uint64_t bytes = 0;
    int64_t mtime_ns = 0;
    double duration = 0;
    bool playable = false;
  };
  Cached measure(const RecordingFileInfo& f);
  void index(const std::vector<App>& apps, uint64_t changes);  // a scan of every app

  size_t max_cached_;
  std::unordered_map<std::string, Cached> cache_;
  std::shared_ptr<const RecordingChanges> changes_;
  std::function<int64_t()> now_ms_;
  std::unordered_map<std::string, RecordingEntry> index_;  // by id
  std::vector<std::string> indexed_roots_;                 // the apps' roots it was built from
  bool indexed_ = false;
  int64_t indexed_at_ms_ = 0;
  uint64_t indexed_changes_ = 0;
};

// The apps that record, as the catalog takes them.
std::vector<RecordingCatalog::App> catalog_apps(const config::Config& cfg);

enum class RemoveResult : uint8_t { Removed, BeingWritten, Gone, Failed };
// Removes a recording unless its writer holds it (the check and the unlink under its lock).
RemoveResult remove_recording(const std::string& path, std::string& error);

}  // namespace rill::record
