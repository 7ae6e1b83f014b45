#pragma once
// WorkerLinkSession: one connection accepted on this worker's relay socket. It reads the request
// line (protocol/worker_link_frame.h), then either
//  - PLAY: becomes a media::Subscriber of the local stream — only if this worker owns it — and
//    sends it as relay frames: Publish, then the hub's replay (metadata, sequence headers, GOP
//    cache), then live frames; Unpublish or End when the publisher leaves or the stream ends, then
//    it closes. Output goes through a bounded media::OutputQueue (the app's queue limits, the
//    same drop/disconnect policy as players), written with one writev per loop iteration
//    (FlushScheduler): header and shared payload as separate iovecs, no copy;
//  - STATS / STATS ALL: writes this worker's (or every worker's) statistics as JSON and closes;
//  - HLS: answers one playlist or segment from this worker's HlsStore as one HlsObject frame (or
//    an Error frame: not found) and closes (cluster/hls_fetcher.h is the other end).
#include <memory>
#include <string>

#include "rill/media/output_queue.h"
#include "rill/media/stream.h"
#include "rill/protocol/worker_link_frame.h"
#include "rill/net/server_context.h"

struct event;

namespace rill::workers {

class StatsGatherer;

class WorkerLinkSession final : public net::Session, public net::Flushable, public media::Subscriber {
 public:
  WorkerLinkSession(net::ServerContext& ctx, int fd);
  ~WorkerLinkSession() override;

  void start();
  void close(const char* reason) override;

  void flush() override;
  void on_frame(const media::FramePtr& frame) override;
  void on_publish(media::Stream&) override {}
  void on_unpublish(media::Stream& s) override;
  void on_stream_end(media::Stream& s) override;

  // For stats.
  bool is_sender() const { return stream_ != nullptr; }
  const std::string& stream_key() const { return key_; }
  uint64_t bytes_out() const { return bytes_out_; }
  uint64_t frames_out() const { return frames_out_; }
  size_t queued_bytes() const { return queue_.bytes(); }
  size_t frames_dropped() const { return queue_.frames_dropped(); }

 private:
  static void on_read_event(int fd, short what, void* arg);
  static void on_write_event(int fd, short what, void* arg);
  static void on_timeout_event(int fd, short what, void* arg);
  void handle_readable();
  void handle_request(const protocol::LinkRequest& r);
  void serve_play(const protocol::LinkRequest& r);
  void serve_hls(const protocol::LinkRequest& r);
  void reply_text(const std::string& text);
  void refuse(const std::string& why);
  void push(BufferRef bytes);
  void close_after_flush(const char* reason);
  void stop_subscription();

  net::ServerContext& ctx_;
  int fd_;
  event* read_ev_ = nullptr;
  event* write_ev_ = nullptr;
  event* timeout_ev_ = nullptr;
  bool write_armed_ = false;
  bool closed_ = false;
  bool closing_after_flush_ = false;
  std::string close_reason_;
  std::string line_;  // request line being read
  bool have_request_ = false;
  std::string key_;
  media::Stream* stream_ = nullptr;  // subscribed (PLAY)
  media::OutputQueue queue_;
  uint64_t bytes_out_ = 0;
  uint64_t frames_out_ = 0;
  std::unique_ptr<StatsGatherer> gatherer_;  // STATS ALL in progress
};

}  // namespace rill::workers
