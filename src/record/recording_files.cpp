#include "rill/record/recording_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "rill/config/config.h"
#include "rill/protocol/error.h"

namespace rill::record {

namespace fs = std::filesystem;

std::string recording_root(const std::string& path_template, const std::string& app) {
  std::string out;
  for (size_t i = 0; i < path_template.size(); ++i) {
    const char c = path_template[i];
    if ((c == '{' || c == '}') && i + 1 < path_template.size() && path_template[i + 1] == c) {
      out += c;
      ++i;
    } else if (path_template.compare(i, 5, "{app}") == 0) {
      out += app;
      i += 4;
    } else if (c == '{') {
      break;
    } else {
      out += c;
    }
  }
  const size_t slash = out.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : out.substr(0, slash);
}

std::vector<RecordingRoot> recording_roots(const config::Config& cfg) {
  std::vector<RecordingRoot> roots;
  for (const auto& [name, app] : cfg.apps) {
    if (app.record.enabled()) roots.push_back(RecordingRoot{name, recording_root(app.record.path, name)});
  }
  return roots;
}

std::string read_recording_index(int fd, uint64_t size, protocol::RecordingIndex& ix,
                                 bool stop_at_closed_flv) {
  std::vector<uint8_t> buf(64 * 1024);
  uint64_t at = ix.fed();
  try {
    while (at < size) {
      if (const uint64_t skip = std::min(ix.skippable(), size - at)) {
        ix.advance(skip);
        at += skip;
        continue;
      }
      if (stop_at_closed_flv && ix.metadata_duration().value_or(0) > 0) break;
      const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - at));
      const ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return std::string("read: ") + std::strerror(errno);
      if (n == 0) break;  // cut meanwhile
      ix.feed(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)));
      at += static_cast<uint64_t>(n);
    }
  } catch (const protocol::ProtocolError& e) {
    return e.what();
  }
  return "";
}

bool locked_by_another(int fd) {
  // A shared lock is refused while a writer holds its exclusive one (flock(2)).
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) return errno == EWOULDBLOCK;
  ::flock(fd, LOCK_UN);
  return false;
}

bool recording_locked(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool locked = locked_by_another(fd);
  ::close(fd);
  return locked;
}

std::vector<RecordingFileInfo> list_recording_files(const std::string& root, std::string& error) {
  std::vector<RecordingFileInfo> out;
  std::error_code ec;
  if (!fs::exists(root, ec)) return out;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    error = root + ": " + ec.message();
    return out;
  }
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) {
      error = root + ": " + ec.message();
      break;
    }
    if (it.depth() >= kMaxRecordingDepth) it.disable_recursion_pending();
    if (!it->is_regular_file(ec)) continue;
    const std::string ext = it->path().extension().string();
    RecordingFileInfo f;
    if (ext == ".mp4") {
      f.format = protocol::RecordingFormat::Fmp4;
    } else if (ext == ".flv") {
      f.format = protocol::RecordingFormat::Flv;
    } else {
      continue;
    }
    if (out.size() >= kMaxRecordingFiles) {
      error = root + ": more than " + std::to_string(kMaxRecordingFiles) +
              " recording files, the rest not listed";
      break;
    }
    f.path = it->path().string();
    const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // removed meanwhile
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      f.bytes = static_cast<uint64_t>(st.st_size);
      f.mtime = st.st_mtim.tv_sec;
      f.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
      f.locked = locked_by_another(fd);
      out.push_back(std::move(f));
    }
    ::close(fd);
  }
  return out;
}

}  // namespace rill::record
