#include "rill/record/file_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

namespace rill::record {

namespace {

constexpr int64_t kAtEnd = -1;

// All of `n` bytes written, at the file position (offset kAtEnd: write()) or at `offset`
// (pwrite(), the position untouched): 0, or the errno. One loop for both, short writes resumed.
int write_all(int fd, const uint8_t* p, size_t n, int64_t offset = kAtEnd) {
  while (n > 0) {
    const ssize_t w = offset == kAtEnd ? ::write(fd, p, n) : ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    p += w;
    n -= static_cast<size_t>(w);
    if (offset != kAtEnd) offset += w;
  }
  return 0;
}

// All the bytes of `iov` written at the file position, IOV_MAX pieces a writev() at most, short
// writes resumed (`iov` is consumed): 0, or the errno.
int writev_all(int fd, std::vector<iovec>& iov) {
  size_t at = 0;
  while (at < iov.size()) {
    const int n = static_cast<int>(std::min<size_t>(iov.size() - at, IOV_MAX));
    ssize_t w = ::writev(fd, iov.data() + at, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    while (at < iov.size() && static_cast<size_t>(w) >= iov[at].iov_len)
      w -= static_cast<ssize_t>(iov[at++].iov_len);
    if (w > 0) {
      iov[at].iov_base = static_cast<uint8_t*>(iov[at].iov_base) + w;
      iov[at].iov_len -= static_cast<size_t>(w);
    }
  }
  return 0;
}

// "dir/name-N.ext" for "dir/name.ext" (the extension: after the last '.' of the last component).
std::string numbered(const std::string& path, int n) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  const size_t at =
      (dot == std::string::npos || (slash != std::string::npos && dot < slash)) ? path.size() : dot;
  return path.substr(0, at) + "-" + std::to_string(n) + path.substr(at);
}

}  // namespace

int make_directories(const std::string& dir) {
  if (dir.empty()) return 0;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  const size_t slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    if (const int err = make_directories(dir.substr(0, slash))) return err;
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return errno;
  return 0;
}

std::string RecordFile::path() const {
  std::lock_guard lock(mu_);
  return path_.empty() ? requested_ : path_;
}

std::string RecordFile::failed_call() const {
  std::lock_guard lock(mu_);
  return call_;
}

void RecordFile::fail(const char* call, int err) {
  if (error_.load(std::memory_order_relaxed) != 0) return;
  {
    std::lock_guard lock(mu_);
    call_ = call;
  }
  error_.store(err, std::memory_order_release);
}

FileWriter::FileWriter(FileWriterOptions options) : opt_(std::move(options)) {
  // The thread takes no signal: the worker's loop handles them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  thread_ = std::thread([this] { run(); });
  // Named, so that its CPU is told from the loop's (top -H, /proc/PID/task/TID/stat).
  pthread_setname_np(thread_.native_handle(), "rill: recorder");
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

FileWriter::~FileWriter() {
  {
    std::lock_guard lock(mu_);
    stopping_ = hurry_ = true;
  }
  cv_.notify_one();
  thread_.join();
  kept_.clear();  // everything is written; on the loop's thread, which destroys the writer
}

uint64_t FileWriter::push(Command c) {
  uint64_t seq = 0;
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(c));
    seq = ++pushed_;
    // A thread between rounds is not woken (no futex call from the loop): it starts the next
    // round on its own, or at once when the queue fills up.
    if (!hurry_ && queued_.load(std::memory_order_relaxed) >= opt_.max_queue_bytes / 4) hurry_ = wake = true;
    wake = wake || waiting_;
  }
  if (wake) cv_.notify_one();
  return seq;
}

void FileWriter::release_written() {
  if (kept_.empty()) return;
  const uint64_t done = carried_out_.load(std::memory_order_acquire);
  while (!kept_.empty() && kept_.front().seq <= done) kept_.pop_front();
}

RecordFilePtr FileWriter::open(std::string path) {
  release_written();
  auto file = std::make_shared<RecordFile>(std::move(path));
  push(Command{Op::Open, file, {}, 0, {}, {}, 0});
  return file;
}

bool FileWriter::reserve_queue(size_t n) {
  size_t queued = queued_.load(std::memory_order_relaxed);
  do {
    if (queued + n > opt_.max_queue_bytes) return false;
  } while (!queued_.compare_exchange_weak(queued, queued + n, std::memory_order_relaxed));
  return true;
}

bool FileWriter::append(const RecordFilePtr& file, BufferRef bytes) {
  release_written();
  if (!reserve_queue(bytes.size())) return false;
  if (bytes && (bytes->use_count() != 1 || bytes->pool())) bytes = SharedBuffer::copy_of(bytes.span());
  const size_t n = bytes.size();
  push(Command{Op::Append, file, std::move(bytes), 0, {}, {}, n});
  return true;
}

bool FileWriter::append(const RecordFilePtr& file, std::vector<uint8_t> bytes) {
  AppendBytes whole;  // all head, nothing borrowed
  whole.head = std::move(bytes);
  return append(file, std::move(whole));
}

bool FileWriter::append(const RecordFilePtr& file, AppendBytes bytes) {
  release_written();
  const size_t n = bytes.size();
  if (!reserve_queue(n)) return false;
  const uint64_t seq =
      push(Command{Op::Append, file, {}, 0, std::move(bytes.head), std::move(bytes.borrowed), n});
  if (!bytes.keep.empty()) kept_.push_back(Kept{seq, std::move(bytes.keep)});
  return true;
}

void FileWriter::write_at(const RecordFilePtr& file, uint64_t offset, BufferRef bytes) {
  release_written();
  if (bytes && (bytes->use_count() != 1 || bytes->pool())) bytes = SharedBuffer::copy_of(bytes.span());
  push(Command{Op::WriteAt, file, std::move(bytes), offset, {}, {}, 0});
}

void FileWriter::close(const RecordFilePtr& file) {
  release_written();
  push(Command{Op::Close, file, {}, 0, {}, {}, 0});
}

void FileWriter::run() {
  std::deque<Command> round;
  auto next_round = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::unique_lock lock(mu_);
      waiting_ = true;
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      // Rounds at least opt_.round apart: what is pushed meanwhile waits for this one.
      waiting_ = false;
      cv_.wait_until(lock, next_round, [this] { return hurry_; });
      if (queue_.empty()) return;  // stopping, and everything is done
      round.swap(queue_);
      busy_ = true;
      hurry_ = stopping_;
    }
    next_round = std::chrono::steady_clock::now() + opt_.round;
    for (Command& c : round) {
      if (opt_.before_command) opt_.before_command();
      execute(c);
      if (c.op == Op::Open && opt_.on_opened) opt_.on_opened(c.file);
      if (c.op == Op::Close && opt_.on_closed) opt_.on_closed(c.file);
      if (c.op == Op::Append) queued_.fetch_sub(c.size, std::memory_order_relaxed);
      c.bytes.reset();  // released here, on this thread: the only reference
      c.file.reset();
      // The borrowed bytes are read: the loop may release their buffers.
      carried_out_.fetch_add(1, std::memory_order_release);
    }
    round.clear();
    {
      std::lock_guard lock(mu_);
      busy_ = false;
    }
    idle_cv_.notify_all();
  }
}

void FileWriter::wait_idle() {
  std::unique_lock lock(mu_);
  while (!queue_.empty() || busy_) {
    if (!queue_.empty() && !hurry_) {
      hurry_ = true;  // no round's wait: the caller blocks on it
      cv_.notify_one();
    }
    idle_cv_.wait(lock);
  }
}

bool FileWriter::idle() const {
  std::lock_guard lock(mu_);
  return queue_.empty() && !busy_;
}

void FileWriter::execute(Command& c) {
  RecordFile& f = *c.file;
  switch (c.op) {
    case Op::Open:
      do_open(f);
      break;
    case Op::Append:
      do_append(f, c);
      break;
    case Op::WriteAt:
      do_write_at(f, c.offset, c.data());
      break;
    case Op::Close:
      do_close(f);
      break;
  }
}

void FileWriter::do_open(RecordFile& f) {
  const std::string& want = f.requested_;
  const size_t slash = want.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    if (const int err = make_directories(want.substr(0, slash))) return f.fail("mkdir", err);
  }
  // An existing file is never overwritten: "-1", "-2"... are tried instead.
  int lost_races = 0;
  for (int n = 0; n < 1000; ++n) {
    std::string path = n == 0 ? want : numbered(want, n);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      // Locked while written, so that any process tells a file in progress from a leftover (the
      // kernel drops the lock of a process that died). A close-out may have locked the new, empty
      // file first and removed it as a leftover: then the same name is free again.
      struct stat st {};
      if (::flock(fd, LOCK_EX) != 0 || ::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return f.fail("flock", err);
      }
      if (st.st_nlink == 0 && ++lost_races < 3) {
        ::close(fd);
        --n;
        continue;
      }
      f.fd_ = fd;
      std::lock_guard lock(f.mu_);
      f.path_ = std::move(path);
      return;
    }
    if (errno != EEXIST) return f.fail("open", errno);
  }
  f.fail("open", EEXIST);
}

void FileWriter::do_append(RecordFile& f, const Command& c) {
  if (f.fd_ < 0 || f.error() != 0) return;
  const uint64_t before = f.written();
  int err = 0;
  const std::span<const uint8_t> head = c.data();
  if (c.borrowed.empty()) {
    err = write_all(f.fd_, head.data(), head.size());
  } else {  // one writev: the head, then the pieces where they lie
    iov_.clear();
    if (!head.empty()) iov_.push_back({const_cast<uint8_t*>(head.data()), head.size()});
    for (const auto& piece : c.borrowed) iov_.push_back({const_cast<uint8_t*>(piece.data()), piece.size()});
    err = writev_all(f.fd_, iov_);
  }
  if (err != 0) {
    // Back to the end of the last whole append: the file ends where its format can be read.
    if (::ftruncate(f.fd_, static_cast<off_t>(before)) == 0)
      ::lseek(f.fd_, static_cast<off_t>(before), SEEK_SET);
    return f.fail("write", err);
  }
  f.written_.store(before + c.size, std::memory_order_release);
  bytes_written_.fetch_add(c.size, std::memory_order_relaxed);
}

void FileWriter::do_write_at(RecordFile& f, uint64_t offset, std::span<const uint8_t> bytes) {
  if (f.fd_ < 0 || f.error() != 0) return;
  if (offset + bytes.size() > f.written()) return;  // only over what the file holds
  if (const int err = write_all(f.fd_, bytes.data(), bytes.size(), static_cast<int64_t>(offset)))
    f.fail("pwrite", err);
}

void FileWriter::do_close(RecordFile& f) {
  if (f.fd_ >= 0) {
    if (f.error() == 0 && ::fdatasync(f.fd_) != 0 && errno != EINVAL) f.fail("fdatasync", errno);
    ::close(f.fd_);
    f.fd_ = -1;
    if (f.written() == 0) ::unlink(f.path().c_str());  // nothing in it: leave nothing behind
  }
  f.closed_.store(true, std::memory_order_release);
}

}  // namespace rill::record
