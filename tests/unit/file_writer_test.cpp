// record::FileWriter: the recording thread's commands, its bound and its errors, on real files
// under a temporary directory.
#include "rill/record/file_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <string>

namespace rill::record {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/rill-fw-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

BufferRef text(std::string_view s) { return SharedBuffer::copy_of(s); }

TEST(FileWriter, OpenAppendRewriteClose) {
  TempDir d;
  FileWriter w;
  const std::string path = d.path + "/a/b/c.flv";  // directories made on the way
  auto f = w.open(path);
  EXPECT_TRUE(w.append(f, text("hello ")));
  EXPECT_TRUE(w.append(f, text("world")));
  w.write_at(f, 0, text("J"));
  w.write_at(f, 9, text("xyz"));  // past what the file holds: not written
  w.close(f);
  w.wait_idle();
  EXPECT_EQ(f->error(), 0);
  EXPECT_TRUE(f->closed());
  EXPECT_EQ(f->written(), 11u);
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(slurp(path), "Jello world");
  EXPECT_EQ(w.queued_bytes(), 0u);
}

// idle() never blocks (a fast stop polls it from the loop): false while a close is being carried
// out, true once every queued command is.
TEST(FileWriter, IdleOnlyOnceEveryCommandIsCarriedOut) {
  TempDir d;
  std::promise<void> closing, release;
  FileWriterOptions o;
  o.on_closed = [&](RecordFilePtr) {
    closing.set_value();
    release.get_future().wait();
  };
  FileWriter w(o);
  EXPECT_TRUE(w.idle());
  auto f = w.open(d.path + "/i.mp4");
  EXPECT_TRUE(w.append(f, text("x")));
  w.close(f);
  closing.get_future().wait();  // the writer thread is inside the close
  EXPECT_FALSE(w.idle());
  release.set_value();
  w.wait_idle();
  EXPECT_TRUE(w.idle());
  EXPECT_TRUE(f->closed());
}

// The opens and closes it carries out are reported on its thread (a catalog's index follows them).
TEST(FileWriter, ReportsOpensAndClosesOnItsThread) {
  TempDir d;
  std::atomic<int> opened{0}, closed{0};
  FileWriterOptions o;
  o.on_opened = [&opened](const RecordFilePtr& f) { opened += f->path().empty() ? 0 : 1; };
  o.on_closed = [&closed](RecordFilePtr f) { closed += f->closed() ? 1 : 0; };
  FileWriter w(o);
  auto f = w.open(d.path + "/a.flv");
  w.wait_idle();
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(closed, 0);
  EXPECT_TRUE(w.append(f, text("x")));
  w.close(f);
  w.wait_idle();
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(closed, 1);
}

TEST(FileWriter, AppendsMovedVectorsInOrderWithinTheBound) {
  TempDir d;
  FileWriterOptions o;
  o.max_queue_bytes = 10;
  FileWriter w(o);
  auto f = w.open(d.path + "/v.mp4");
  EXPECT_TRUE(w.append(f, std::vector<uint8_t>{'a', 'b', 'c'}));
  EXPECT_TRUE(w.append(f, text("de")));
  EXPECT_FALSE(w.append(f, std::vector<uint8_t>(11, 'x')));  // past the bound: refused
  EXPECT_TRUE(w.append(f, std::vector<uint8_t>{'f'}));
  w.close(f);
  w.wait_idle();
  EXPECT_EQ(f->error(), 0);
  EXPECT_EQ(slurp(f->path()), "abcdef");
  EXPECT_EQ(w.queued_bytes(), 0u);
}

// Bytes partly borrowed: the head, then the pieces where they lie (more than one writev() takes,
// IOV_MAX = 1024), within the bound; the buffers they lie in are held until the thread has written
// them, and released on the caller's side (release_written, or the next call).
TEST(FileWriter, AppendsBorrowedPiecesAfterTheHeadAndKeepsTheirBuffersUntilWritten) {
  TempDir d;
  std::atomic<bool> hold{true};
  FileWriterOptions o;
  o.max_queue_bytes = 4000;
  o.before_command = [&] {
    while (hold.load()) ::usleep(1000);
  };
  FileWriter w(o);
  auto f = w.open(d.path + "/b.mp4");
  const BufferRef body = text(std::string(1000, 'a') + std::string(1000, 'b') + std::string(500, 'c'));
  AppendBytes bytes;
  bytes.head = {'H', 'E', 'A', 'D'};
  const auto s = body.span();
  for (size_t i = 0; i < 2000; ++i) bytes.borrow(s.subspan(i, 1));  // 2000 pieces of one byte
  bytes.borrow({});                                                 // an empty one is left out
  bytes.borrow(s.subspan(2000));
  bytes.keep.push_back(body);
  EXPECT_EQ(bytes.size(), 2504u);
  EXPECT_TRUE(w.append(f, std::move(bytes)));
  EXPECT_EQ(body->use_count(), 2u);  // held by the writer
  EXPECT_EQ(w.queued_bytes(), 2504u);
  AppendBytes more;
  more.borrow(s.subspan(0, 1500));
  EXPECT_FALSE(w.append(f, std::move(more)));  // past the bound: refused, nothing queued
  w.release_written();
  EXPECT_EQ(body->use_count(), 2u);  // not written yet
  hold = false;
  w.wait_idle();
  EXPECT_EQ(body->use_count(), 2u);  // released on the caller's side only
  w.release_written();
  EXPECT_EQ(body->use_count(), 1u);
  AppendBytes tail;
  tail.head = {'!'};
  tail.keep.push_back(body);
  EXPECT_TRUE(w.append(f, std::move(tail)));
  w.close(f);  // releases nothing yet: the append may still be queued
  w.wait_idle();
  w.release_written();
  EXPECT_EQ(body->use_count(), 1u);
  EXPECT_EQ(f->error(), 0);
  EXPECT_EQ(f->written(), 2505u);
  EXPECT_EQ(slurp(f->path()), "HEAD" + std::string(body->view()) + "!");
  EXPECT_EQ(w.queued_bytes(), 0u);
}

TEST(FileWriter, NeverOverwrites) {
  TempDir d;
  FileWriter w;
  const std::string path = d.path + "/x.mp4";
  std::ofstream(path) << "old";
  auto f = w.open(path);
  w.append(f, text("new"));
  w.close(f);
  w.wait_idle();
  EXPECT_EQ(f->path(), d.path + "/x-1.mp4");
  EXPECT_EQ(slurp(path), "old");
  EXPECT_EQ(slurp(d.path + "/x-1.mp4"), "new");
}

TEST(FileWriter, EmptyFileIsRemoved) {
  TempDir d;
  FileWriter w;
  auto f = w.open(d.path + "/empty.mp4");
  w.close(f);
  w.wait_idle();
  EXPECT_FALSE(fs::exists(d.path + "/empty.mp4"));
}

TEST(FileWriter, OpenErrorIsPublished) {
  TempDir d;
  std::ofstream(d.path + "/file") << "x";
  FileWriter w;
  auto f = w.open(d.path + "/file/rec.flv");  // a file where a directory is expected
  EXPECT_TRUE(w.append(f, text("data")));     // queued; dropped by the thread
  w.close(f);
  w.wait_idle();
  EXPECT_EQ(f->error(), ENOTDIR);
  EXPECT_EQ(f->failed_call(), "mkdir");
  EXPECT_EQ(f->written(), 0u);
  EXPECT_EQ(w.queued_bytes(), 0u);
}

TEST(FileWriter, QueueIsBoundedInBytes) {
  TempDir d;
  std::atomic<bool> hold{true};
  FileWriterOptions o;
  o.max_queue_bytes = 100;
  o.before_command = [&] {
    while (hold.load()) ::usleep(1000);  // a disk that does not answer
  };
  FileWriter w(o);
  auto f = w.open(d.path + "/slow.flv");
  EXPECT_TRUE(w.append(f, text(std::string(60, 'a'))));
  EXPECT_TRUE(w.append(f, text(std::string(40, 'b'))));
  EXPECT_EQ(w.queued_bytes(), 100u);
  EXPECT_FALSE(w.append(f, text("c")));  // refused at once, nothing queued
  EXPECT_EQ(w.queued_bytes(), 100u);
  hold = false;
  w.close(f);
  w.wait_idle();
  EXPECT_EQ(w.queued_bytes(), 0u);
  EXPECT_EQ(slurp(f->path()), std::string(60, 'a') + std::string(40, 'b'));
  auto g = w.open(d.path + "/again.flv");
  EXPECT_TRUE(w.append(g, text("c")));  // room again
  w.close(g);
  w.wait_idle();
}

TEST(FileWriter, WriteErrorCutsBackToTheLastWholeAppend) {
  TempDir d;
  FileWriter w;
  auto f = w.open(d.path + "/big.flv");
  w.append(f, text(std::string(600, 'a')));
  w.wait_idle();
  // The process may not grow a file past 1000 bytes: the next write fails with EFBIG half way.
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  rlimit limit = old;
  limit.rlim_cur = 1000;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  w.append(f, text(std::string(600, 'b')));
  w.append(f, text("after"));  // dropped: the file failed
  w.wait_idle();
  ::setrlimit(RLIMIT_FSIZE, &old);
  w.close(f);
  w.wait_idle();
  EXPECT_EQ(f->error(), EFBIG);
  EXPECT_EQ(f->failed_call(), "write");
  EXPECT_EQ(f->written(), 600u);
  EXPECT_EQ(slurp(f->path()), std::string(600, 'a'));  // whole appends only
}

// Another open file description of `path` can take the lock: no writer holds it.
bool lockable(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return ok;
}

TEST(FileWriter, HoldsALockWhileTheFileIsOpen) {
  TempDir d;
  FileWriter w;
  auto f = w.open(d.path + "/locked.mp4");
  EXPECT_TRUE(w.append(f, text("data")));
  w.wait_idle();
  EXPECT_FALSE(lockable(f->path()));  // in progress
  w.close(f);
  w.wait_idle();
  EXPECT_TRUE(lockable(f->path()));  // complete (or a dead writer's leftover)
}

// FileWriterOptions::round: commands pushed after a round wait for the next one (the thread is
// not woken for each), unless the queue holds a quarter of its bound, someone waits for idle, or
// the writer ends. A round of a minute: nothing here waits for it, but a command that was not
// held would show at once.
TEST(FileWriter, CommandsBetweenRoundsWaitForTheNextOne) {
  TempDir d;
  FileWriterOptions o;
  o.round = std::chrono::minutes(1);
  o.max_queue_bytes = 4096;
  auto w = std::make_unique<FileWriter>(o);
  const std::string path = d.path + "/r.flv";
  auto f = w->open(path);  // the first round starts at once
  w->wait_idle();
  ASSERT_EQ(f->error(), 0);

  ASSERT_TRUE(w->append(f, text("held ")));
  ::usleep(100 * 1000);
  EXPECT_FALSE(w->idle());  // waiting for the next round, a minute after the first
  EXPECT_EQ(f->written(), 0u);
  w->wait_idle();  // it does not wait for the round
  EXPECT_EQ(f->written(), 5u);

  // A quarter of the queue's bound (1 KiB of 4) starts a round at once.
  ASSERT_TRUE(w->append(f, text("then ")));
  ASSERT_TRUE(w->append(f, SharedBuffer::copy_of(std::string(1024, 'x'))));
  for (int i = 0; i < 2000 && !w->idle(); ++i) ::usleep(1000);
  EXPECT_TRUE(w->idle());
  EXPECT_EQ(f->written(), 10u + 1024u);

  // What is queued at the end is carried out then.
  ASSERT_TRUE(w->append(f, text("last")));
  w->close(f);
  w.reset();
  EXPECT_TRUE(f->closed());
  EXPECT_EQ(slurp(path), "held then " + std::string(1024, 'x') + "last");
}

}  // namespace
}  // namespace rill::record
