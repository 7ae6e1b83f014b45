#pragma once
// FileWriter: the one thread of a worker that touches recording files, so that the worker's event
// loop never waits on a disk. The loop queues commands — open a file, append bytes, write bytes
// at an offset (a header rewritten at close), close — and the thread carries them out in order.
// The queue is bounded in bytes: an append that would pass the bound is refused at once (nothing
// queued), which is how a recorder learns that the disk is slower than its input.
//
// What happened to a file is published on its RecordFile (atomics, read from the loop): the
// bytes the file holds, and the first error. After an error the file is cut back to the end of
// the last append that was written whole (ftruncate), so it ends at a boundary its format can
// read (an FLV tag, an fMP4 fragment); later appends and writes to it are dropped. A file that
// never got a byte is removed.
//
// Each file is held with flock(LOCK_EX) from its open to its close: a file of a recording
// directory that is not locked is a leftover (its writer closed it, or died), which is what
// record's close-out and catalog go by.
//
// Bytes cross threads as BufferRefs whose count is not atomic: a buffer handed over must have no
// other reference and come from no BufferPool (one that does is copied first), and the thread
// releases it. Or they cross without a copy and without their references (AppendBytes::borrowed):
// the thread reads them where they lie, while the references stay on the loop's side, kept by the
// writer until the thread has written the bytes and released there (release_written()).
//
// record/: core only. No libevent: the loop learns of errors by reading the RecordFile.
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rill/core/buffer.h"

namespace rill::record {

class FileWriter;

// What the loop says of a file as it closes it (set before close() is queued; read by
// FileWriterOptions::on_closed, after the close): for the on_record_done callback.
struct RecordCloseNote {
  std::string app, name;
  std::time_t started = 0;  // wall clock of the open
  uint32_t duration_ms = 0;
  std::string reason;  // rotated | unpublished | stopped | failed: WHY | shutdown
};

// One file, shared by the loop (which reads it) and the writer thread (which updates it).
class RecordFile {
 public:
  explicit RecordFile(std::string path) : requested_(std::move(path)) {}
  // The name asked for; path() is the name used once opened (a "-1", "-2"... before the extension
  // when a file of that name already existed).
  const std::string& requested_path() const { return requested_; }
  std::string path() const;
  // errno of the first failure (open, write, sync), 0 while there is none.
  int error() const { return error_.load(std::memory_order_acquire); }
  // What failed, e.g. "write", with error(): for the log line.
  std::string failed_call() const;
  uint64_t written() const { return written_.load(std::memory_order_acquire); }  // bytes in the file
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // The loop's, before close(); the writer thread reads it only after the close.
  void set_note(RecordCloseNote note) { note_ = std::move(note); }
  const RecordCloseNote& note() const { return note_; }

 private:
  friend class FileWriter;
  void fail(const char* call, int err);

  const std::string requested_;
  mutable std::mutex mu_;
  std::string path_;       // guarded by mu_
  const char* call_ = "";  // guarded by mu_
  int fd_ = -1;            // the writer thread's
  std::atomic<int> error_{0};
  std::atomic<uint64_t> written_{0};
  std::atomic<bool> closed_{false};
  RecordCloseNote note_;
};
using RecordFilePtr = std::shared_ptr<RecordFile>;

// Bytes to append to a file: `head`, then the `borrowed` pieces, which the writer thread reads
// where they lie instead of a copy (a recording's samples, straight from the frames' payloads into
// the file: the mdat of an fMP4 fragment). `keep` holds the buffers they lie in; the pieces must
// stay unchanged while it does.
struct AppendBytes {
  std::vector<uint8_t> head;
  std::vector<std::span<const uint8_t>> borrowed;
  std::vector<BufferRef> keep;
  size_t borrowed_bytes = 0;  // of `borrowed`

  size_t size() const { return head.size() + borrowed_bytes; }
  bool empty() const { return size() == 0; }
  // Adds a piece (an empty one is left out).
  void borrow(std::span<const uint8_t> piece) {
    if (piece.empty()) return;
    borrowed.push_back(piece);
    borrowed_bytes += piece.size();
  }
  void clear() {
    head.clear();
    borrowed.clear();
    keep.clear();
    borrowed_bytes = 0;
  }
};

struct FileWriterOptions {
  size_t max_queue_bytes = 64u << 20;  // appends waiting or being written
  // The thread carries out what is queued in rounds at least this far apart (0: each command as
  // it comes). A worker's recorders hand over a chunk each per `flush`, spread over the second:
  // woken for each one, the thread met the kernel's write path cold every time, next to a loop
  // busy with other bytes; a round writes the chunks of many files back to back. Measured apart
  // from Rill, next to a record-50 loop: 0.42–0.53 ms per MB one write at a time, 0.29–0.32 in
  // rounds of 100 ms (docs/recording.md, "Off the event loop"). A round starts at once when the
  // queue holds a quarter of max_queue_bytes, for wait_idle() and at the end. Recorders hand over
  // their chunks this much earlier than `flush` (at most half of it: media::Recorder's flush), so
  // data still reaches the file within `flush`.
  std::chrono::milliseconds round{100};
  // The wall clock the recorders name files with (media/ has none).
  std::function<std::time_t()> clock = [] { return std::time(nullptr); };
  // Test-only: called on the writer thread before each command (a test holds it to play a slow disk).
  std::function<void()> before_command;
  // Called on the writer thread after each close is carried out (the file's closed() is true):
  // what hands the close back to the worker's loop (server/record_reports.h).
  std::function<void(RecordFilePtr)> on_closed;
  // Called on the writer thread after each open is carried out (failed or not): the worker's
  // recording catalog learns that its files changed (record/recording_changes.h).
  std::function<void(const RecordFilePtr&)> on_opened;
};

class FileWriter {
 public:
  explicit FileWriter(FileWriterOptions options = {});
  // Carries out what is queued (closing every file), then joins the thread.
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  // Queues the creation of `path` and of its missing directories. Never refused.
  RecordFilePtr open(std::string path);
  // Queues `bytes` at the end of the file. False, with nothing queued, when the queue would pass
  // max_queue_bytes.
  bool append(const RecordFilePtr& file, BufferRef bytes);
  // The same with bytes the caller gives up: moved in, not copied, and shared with no one.
  bool append(const RecordFilePtr& file, std::vector<uint8_t> bytes);
  // The same with bytes partly borrowed (AppendBytes): their references are kept here, on the
  // loop's side, until the thread has written them. One writev() where the pieces fit.
  bool append(const RecordFilePtr& file, AppendBytes bytes);
  // Releases the references of borrowed bytes the thread has written. Every call of this writer
  // from the loop (open, append, write_at, close) does it first; the loop also calls it when the
  // thread tells it of a close (so that nothing stays held once the last recording ends).
  void release_written();
  // Queues `bytes` at `offset` (inside what the file holds). Not bounded: for small rewrites.
  void write_at(const RecordFilePtr& file, uint64_t offset, BufferRef bytes);
  // Queues fdatasync + close. Never refused.
  void close(const RecordFilePtr& file);

  // Blocks until every command queued so far is carried out. For tests: the event loop never
  // calls it.
  void wait_idle();
  // True when every command queued so far is carried out. Never blocks: a worker's fast stop
  // polls it while its last files close.
  bool idle() const;

  size_t queued_bytes() const { return queued_.load(std::memory_order_relaxed); }
  // Running totals of this writer, for the metrics: bytes written to files, and recordings that
  // stopped for an error (counted by the recorders, note_failure()).
  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  void note_failure() { failures_.fetch_add(1, std::memory_order_relaxed); }
  size_t max_queue_bytes() const { return opt_.max_queue_bytes; }
  std::chrono::milliseconds round() const { return opt_.round; }
  std::time_t now() const { return opt_.clock(); }

 private:
  enum class Op : uint8_t { Open, Append, WriteAt, Close };
  struct Command {
    Op op;
    RecordFilePtr file;
    BufferRef bytes;
    uint64_t offset = 0;
    std::vector<uint8_t> owned;  // the bytes instead, when appended as a vector
    std::vector<std::span<const uint8_t>> borrowed;  // after `owned` (AppendBytes::borrowed)
    size_t size = 0;                                 // of an append: all its bytes

    std::span<const uint8_t> data() const { return bytes ? bytes.span() : std::span<const uint8_t>(owned); }
  };
  // The references of one append's borrowed bytes, until the command `seq` is carried out.
  struct Kept {
    uint64_t seq;
    std::vector<BufferRef> refs;
  };
  bool reserve_queue(size_t n);  // counts n more bytes queued; false if that passes the bound
  uint64_t push(Command c);      // returns the command's sequence number
  void run();
  void execute(Command& c);
  void do_open(RecordFile& f);
  void do_append(RecordFile& f, const Command& c);
  void do_write_at(RecordFile& f, uint64_t offset, std::span<const uint8_t> bytes);
  void do_close(RecordFile& f);

  FileWriterOptions opt_;
  std::atomic<size_t> queued_{0};
  std::atomic<uint64_t> bytes_written_{0}, failures_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Command> queue_;  // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  bool busy_ = false;          // guarded by mu_: a command is being carried out
  bool waiting_ = false;       // guarded by mu_: the thread waits for a command (a push wakes it)
  bool hurry_ = false;         // guarded by mu_: the next round starts now (wait_idle, a full queue)
  std::condition_variable idle_cv_;
  uint64_t pushed_ = 0;                   // guarded by mu_: commands queued so far
  std::atomic<uint64_t> carried_out_{0};  // commands carried out so far (they are in order)
  std::deque<Kept> kept_;                 // the loop's
  std::vector<iovec> iov_;                // the thread's, reused
  std::thread thread_;
};

// Creates the missing directories of `dir` (mode 0755). 0 or the errno of the first failure.
int make_directories(const std::string& dir);

}  // namespace rill::record
