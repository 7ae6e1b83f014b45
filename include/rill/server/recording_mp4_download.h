#pragma once
// RecordingMp4Download: the body of one recording.mp4 response (server/recording_mp4_route.h),
// streamed: the bytes first..first+length of head ++ runs (protocol/progressive_mp4.h), the
// head from memory, the runs read from the recording files piece by piece (kPiece bytes) on the
// worker's BlockingWorkThread. One read at a time, and the next one only while less than
// kMaxQueued bytes wait in the connection's queue: a client that reads slowly holds the reading
// back (the queue drains, on_drained, reading resumes), so a download keeps at most about
// kPiece + kMaxQueued bytes in memory whatever its size. The files were opened when the cut was
// planned; a file that ends short (truncated since) ends the body early, the connection closed
// (the client sees fewer bytes than Content-Length said).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rill/core/timer_queue.h"
#include "rill/http/http_body_stream.h"
#include "rill/net/socket.h"
#include "rill/protocol/progressive_mp4.h"

namespace rill::net {
class BlockingWorkThread;
}

namespace rill::server {

// A planned cut and its files, open (read on the work thread only).
struct RecordingMp4Cut {
  protocol::ProgressiveMp4 mp4;
  std::vector<net::UniqueFd> files;  // by Mp4ByteRun::file
  std::vector<uint64_t> run_at;      // where each run starts in the whole body
};

class RecordingMp4Download {
 public:
  static constexpr size_t kPiece = 128 * 1024;
  static constexpr size_t kMaxQueued = 256 * 1024;
  // Told once when the body ended (sent, or the client left); the owner destroys the download
  // later, never inside the call.
  using Done = std::function<void(RecordingMp4Download*)>;
  struct Access {  // for the log line at the end
    std::string peer, app, name, args, agent;
    int64_t started_ms = 0;
  };

  RecordingMp4Download(net::WorkerCore& ctx, net::BlockingWorkThread& work, http::HttpStreamHandover handover,
                       std::shared_ptr<const RecordingMp4Cut> cut, uint64_t first, uint64_t length,
                       Access access, Done done);
  ~RecordingMp4Download();
  RecordingMp4Download(const RecordingMp4Download&) = delete;
  RecordingMp4Download& operator=(const RecordingMp4Download&) = delete;

  void start();

 private:
  void pump();
  void read_next();
  void on_piece(std::vector<uint8_t> bytes, const std::string& error);
  void push(std::span<const uint8_t> bytes);
  void finish(const std::string& reason);

  net::WorkerCore& ctx_;
  net::BlockingWorkThread& work_;
  std::unique_ptr<http::HttpBodyStream> body_;
  std::shared_ptr<const RecordingMp4Cut> cut_;
  uint64_t pos_, end_;
  Access access_;
  Done done_;
  bool reading_ = false, ending_ = false, finished_ = false;
  TimerId retry_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // the work thread's answers check it
};

}  // namespace rill::server
