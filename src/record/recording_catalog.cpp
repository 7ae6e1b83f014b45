#include "rill/record/recording_catalog.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <regex>

#include "rill/config/config.h"

namespace rill::record {

std::string recording_id(const std::string& app, const std::string& path_below_root) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits
  auto add = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
  };
  add(app);
  add("/");
  add(path_below_root);
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::string recording_stream_name(const std::string& path_template, const std::string& app,
                                  const std::string& path) {
  // The template as a pattern: {name} one path component's part, {start...} anything, {app} the
  // app; then the "-N" a taken name gets and the extension.
  std::string rx;
  auto escape = [&rx](char c) {
    if (c != 0 && std::strchr(".^$|()[]{}*+?\\", c)) rx += '\\';
    rx += c;
  };
  int name_group = 0, groups = 0;
  for (size_t i = 0; i < path_template.size(); ++i) {
    const char c = path_template[i];
    if ((c == '{' || c == '}') && i + 1 < path_template.size() && path_template[i + 1] == c) {
      rx += '\\';
      rx += c;
      ++i;
    } else if (c == '{') {
      const size_t close = path_template.find('}', i);
      if (close == std::string::npos) return "";
      const std::string inside = path_template.substr(i + 1, close - i - 1);
      if (inside == "name") {
        rx += "([^/]+?)";
        name_group = ++groups;
      } else if (inside == "app") {
        for (char a : app) escape(a);
      } else {
        rx += "(.*?)";
        ++groups;
      }
      i = close;
    } else {
      escape(c);
    }
  }
  rx += "(?:-[0-9]+)?\\.(?:mp4|flv)";
  try {
    std::smatch m;
    if (name_group > 0 && std::regex_match(path, m, std::regex(rx))) return m[name_group].str();
  } catch (const std::regex_error&) {
  }
  return "";
}

RecordingCatalog::Cached RecordingCatalog::measure(const RecordingFileInfo& f) {
  auto it = cache_.find(f.path);
  if (it != cache_.end() && it->second.bytes == f.bytes && it->second.mtime_ns == f.mtime_ns)
    return it->second;
  Cached c{f.bytes, f.mtime_ns, 0, false};
  const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    protocol::RecordingIndexLimits lim;
    lim.keep_entries = false;
    protocol::RecordingIndex ix(lim);
    read_recording_index(fd, f.bytes, ix, true);
    ::close(fd);
    c.duration = ix.metadata_duration().value_or(0) > 0 ? *ix.metadata_duration() : ix.duration_seconds();
    c.playable = ix.playable();
  }
  if (cache_.size() >= max_cached_) cache_.clear();  // bounded: the next listings fill it again
  cache_[f.path] = c;
  return c;
}

std::vector<RecordingEntry> RecordingCatalog::list(const App& app, std::string& error) {
  std::vector<RecordingEntry> out;
  for (const RecordingFileInfo& f : list_recording_files(app.root.dir, error)) {
    const Cached c = measure(f);
    RecordingEntry e;
    const std::string below = f.path.substr(std::min(f.path.size(), app.root.dir.size() + 1));
    e.id = recording_id(app.root.app, below);
    e.app = app.root.app;
    e.name = recording_stream_name(app.path_template, app.root.app, f.path);
    e.path = f.path;
    e.duration = c.duration;
    e.start = static_cast<double>(f.mtime_ns) / 1e9 - c.duration;
    e.bytes = f.bytes;
    e.format = f.format;
    e.recording = f.locked;
    out.push_back(std::move(e));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RecordingEntry& a, const RecordingEntry& b) { return a.start < b.start; });
  return out;
}

namespace {
int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<std::string> roots_of(const std::vector<RecordingCatalog::App>& apps) {
  std::vector<std::string> roots;
  for (const auto& a : apps) roots.push_back(a.root.app + '\0' + a.root.dir + '\0' + a.path_template);
  return roots;
}
}  // namespace

void RecordingCatalog::index(const std::vector<App>& apps, uint64_t changes) {
  index_.clear();
  for (const App& app : apps) {
    std::string error;
    for (RecordingEntry& e : list(app, error)) index_[e.id] = std::move(e);
  }
  indexed_roots_ = roots_of(apps);
  indexed_ = true;
  indexed_at_ms_ = now_ms_ ? now_ms_() : steady_ms();
  indexed_changes_ = changes;
}

std::optional<RecordingEntry> RecordingCatalog::find(const std::vector<App>& apps, const std::string& id) {
  index(apps, changes_ ? changes_->count() : 0);
  const auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::optional<RecordingEntry> RecordingCatalog::lookup(const std::vector<App>& apps, const std::string& id) {
  const int64_t now = now_ms_ ? now_ms_() : steady_ms();
  const uint64_t changes = changes_ ? changes_->count() : 0;  // read before a scan: a change during it counts
  const bool stale = !indexed_ || changes != indexed_changes_ || now - indexed_at_ms_ >= kIndexTtlMs ||
                     roots_of(apps) != indexed_roots_;
  auto it = stale ? index_.end() : index_.find(id);
  if (it == index_.end() && (stale || now - indexed_at_ms_ >= kMissRescanMs)) {
    index(apps, changes);
    it = index_.find(id);
  }
  if (it == index_.end()) return std::nullopt;
  RecordingEntry e = it->second;
  e.recording = recording_locked(e.path);  // whoever writes it: the lock now, not at the scan
  return e;
}

std::vector<RecordingCatalog::App> catalog_apps(const config::Config& cfg) {
  std::vector<RecordingCatalog::App> apps;
  for (RecordingRoot& root : recording_roots(cfg)) {
    const std::string tmpl = cfg.apps.at(root.app).record.path;
    apps.push_back(RecordingCatalog::App{std::move(root), tmpl});
  }
  return apps;
}

RemoveResult remove_recording(const std::string& path, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return errno == ENOENT ? RemoveResult::Gone : RemoveResult::Failed;
  }
  RemoveResult r = RemoveResult::Removed;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    r = RemoveResult::BeingWritten;
  } else if (::unlink(path.c_str()) != 0) {
    error = std::strerror(errno);
    r = errno == ENOENT ? RemoveResult::Gone : RemoveResult::Failed;
  }
  ::close(fd);
  return r;
}

}  // namespace rill::record
