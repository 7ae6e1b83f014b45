#pragma once
// FileRangeBody: a response body whose bytes lie in files, streamed (docs/recording.md,
// "Playback"): the bytes first..first+length of a FileRangeSource — a head in memory, then runs
// of open files — sent on a connection handed over by HttpExchange::take_stream(). Both recording
// download routes answer with it: /recordings/{id}/{file} (no head, one run: the file) and
// recording.mp4 (the cut's moov, then its samples' runs).
//
// The files are read piece by piece (kPiece bytes) on the worker's BlockingWorkThread, never on
// the event loop. One read at a time, and the next one only while less than kMaxQueued bytes
// wait in the connection's queue: a client that reads slowly holds the reading back (the queue
// drains, on_drained, reading resumes), so a body keeps at most about kPiece + kMaxQueued bytes
// in memory whatever its size. A file that ends short (truncated since it was opened) ends the
// body early with the connection closed (the client sees fewer bytes than Content-Length said).
//
// A client that stops reading holds the reading back for good, so the body has a send timeout:
// when bytes wait (in the queue or the kernel's) and the client acknowledged none of them for
// http.timeout (the timeout the HTTP connection's responses have), the connection closes and the
// body ends with "send timeout". Checked every quarter of http.timeout: the close comes within
// 1.25 times it. A client that reads, however slowly, is never cut; waiting for the disk does
// not count.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rill/core/timer_queue.h"
#include "rill/http/http_body_stream.h"
#include "rill/net/socket.h"

namespace rill::net {
class BlockingWorkThread;
}

namespace rill::server {

// What a body is made of: `head`, then each run's bytes of files[run.file]. The files are open
// (read on the work thread only); index() places the runs once they are all added.
struct FileRangeSource {
  struct Run {
    uint32_t file = 0;
    uint64_t offset = 0, length = 0;
  };
  std::vector<uint8_t> head;
  std::vector<Run> runs;
  std::vector<net::UniqueFd> files;  // by Run::file
  std::vector<uint64_t> run_at;      // where each run starts in the whole body (index())
  uint64_t size = 0;                 // head + every run (index())

  void index();
};

class FileRangeBody {
 public:
  // The end reason when the client took no byte within http.timeout.
  static constexpr const char* kSendTimeout = "send timeout";

  static constexpr size_t kPiece = 128 * 1024;
  static constexpr size_t kMaxQueued = 256 * 1024;
  // Told once when the body ended: "" when every byte was queued and the connection ended
  // gracefully, else why not (the client left, a read failed). Never for close().
  using Ended = std::function<void(const std::string& reason)>;

  // `what` names the body in a warning ("recording live/cam").
  FileRangeBody(net::WorkerCore& ctx, net::BlockingWorkThread& work, http::HttpStreamHandover handover,
                std::shared_ptr<const FileRangeSource> source, uint64_t first, uint64_t length,
                std::string what, Ended ended);
  ~FileRangeBody();
  FileRangeBody(const FileRangeBody&) = delete;
  FileRangeBody& operator=(const FileRangeBody&) = delete;

  void start();
  // Closes the connection now; the Ended callback is not called.
  void close(std::string_view reason);

  uint64_t body_bytes() const { return body_->body_bytes(); }
  uint64_t bytes_in() const { return body_->connection().bytes_in(); }
  size_t queued_bytes() const { return body_->queued_bytes(); }

 private:
  void pump();
  void read_next();
  void on_piece(std::vector<uint8_t> bytes, const std::string& error);
  void push(std::span<const uint8_t> bytes);
  void end(const std::string& reason);
  void watch_sending();
  void check_sending();


  net::WorkerCore& ctx_;
  net::BlockingWorkThread& work_;
  std::unique_ptr<http::HttpBodyStream> body_;
  std::shared_ptr<const FileRangeSource> source_;
  uint64_t pos_, end_;
  std::string what_;
  Ended ended_;
  bool reading_ = false, ending_ = false, ended_told_ = false;
  TimerId retry_ = 0;
  TimerId watch_ = 0;        // the send timeout's check
  uint64_t last_taken_ = 0;  // bytes the client took, at the last check that saw progress
  int64_t last_progress_ms_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // the work thread's answers check it
};

}  // namespace rill::server
