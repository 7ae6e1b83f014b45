#include "rill/process/pid_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace rill::process {
namespace {

std::string read_fd_text(int fd) {
  std::string text;
  char buf[64];
  off_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof(buf), off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    off += n;
    if (text.size() > 1024) break;
  }
  return text;
}

std::optional<pid_t> parse_pid(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  long long v = 0;
  size_t digits = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
    v = v * 10 + (text[i] - '0');
    if (v > 0x7fffffff) return std::nullopt;
  }
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
  if (digits == 0 || i != text.size() || v <= 0) return std::nullopt;
  return static_cast<pid_t>(v);
}

// A live process whose title says it is a rill master (guards against pid reuse).
bool is_live_rill(pid_t pid) {
  if (pid == ::getpid()) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string cmd;
  std::getline(in, cmd, '\0');
  return cmd.rfind("rill: master", 0) == 0;
}

}  // namespace

PidFile::PidFile(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  auto parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);

  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open pid file " + path_ + ": " + std::strerror(errno));
  auto fail = [&](const std::string& msg) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(msg);
  };
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    auto pid = parse_pid(read_fd_text(fd_));
    if (e == EWOULDBLOCK)
      fail("rill is already running (pid " + (pid ? std::to_string(*pid) : std::string("?")) +
           ", pid file " + path_ + ")");
    fail("cannot lock pid file " + path_ + ": " + std::strerror(e));
  }
  if (auto old = parse_pid(read_fd_text(fd_)); old && is_live_rill(*old))
    fail("rill is already running (pid " + std::to_string(*old) + ", pid file " + path_ + ")");

  std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    fail("cannot write pid file " + path_ + ": " + std::strerror(errno));
}

PidFile::~PidFile() {
  remove();
  if (fd_ >= 0) ::close(fd_);
}

void PidFile::close_in_child() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  removed_ = true;  // never unlink from a child
}

bool PidFile::rename_to(const std::string& path) {
  if (::rename(path_.c_str(), path.c_str()) != 0) return false;
  path_ = path;
  return true;
}

void PidFile::remove() {
  if (removed_ || fd_ < 0) return;
  removed_ = true;
  // Only unlink the file if it is still ours (not replaced by someone else meanwhile).
  if (auto pid = read_pid_file(path_, nullptr); pid && *pid == ::getpid()) ::unlink(path_.c_str());
}

std::optional<pid_t> read_pid_file(const std::string& path, std::string* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = "cannot open pid file " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::string text = read_fd_text(fd);
  ::close(fd);
  auto pid = parse_pid(text);
  if (!pid && error) *error = "pid file " + path + " does not hold a pid";
  return pid;
}

}  // namespace rill::process
