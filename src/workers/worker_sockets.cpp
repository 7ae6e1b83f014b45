#include "rill/workers/worker_sockets.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <filesystem>

namespace rill::workers {

namespace {

constexpr std::string_view kPrefix = "worker-";
constexpr std::string_view kSuffix = ".sock";

// A decimal number of 1 to 9 digits (slots and pids fit), nothing else.
std::optional<long> decimal(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.front() == '-' || text.front() == '+') {
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::optional<WorkerSocketName> parse_worker_socket_name(std::string_view name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) || !name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  const std::string_view middle = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  const size_t dot = middle.find('.');
  if (dot == std::string_view::npos) return std::nullopt;  // worker-<slot>.sock: the slot's name
  const auto slot = decimal(middle.substr(0, dot));
  const auto pid = decimal(middle.substr(dot + 1));
  if (!slot || !pid || *pid <= 0) return std::nullopt;
  return WorkerSocketName{static_cast<int>(*slot), static_cast<pid_t>(*pid)};
}

std::optional<ino_t> socket_inode(const std::string& path) {
  struct stat sb{};
  if (::stat(path.c_str(), &sb) != 0) return std::nullopt;
  return sb.st_ino;
}

std::vector<WorkerSocket> list_worker_sockets(const std::string& runtime_dir, size_t limit) {
  std::vector<WorkerSocket> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(runtime_dir, ec), end;
  for (; !ec && it != end && out.size() < limit; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    const auto name = parse_worker_socket_name(file);
    if (!name) continue;
    if (::kill(name->pid, 0) != 0 && errno == ESRCH) continue;  // left behind by a killed worker
    const std::string path = it->path().string();
    const auto inode = socket_inode(path);
    if (!inode) continue;  // removed meanwhile: that worker left
    out.push_back({name->slot, name->pid, path, *inode});
  }
  return out;
}

}  // namespace rill::workers
