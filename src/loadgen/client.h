#pragma once
// rill-bench: the socket half of every connection - non-blocking connect, reads into the loop's
// shared scratch buffer, a small output queue of shared buffers written with writev - and the
// bookkeeping of its ClientRecord (failed / dropped, streaming count, bytes).
//
// Subclasses (RtmpClient, HttpFlvClient, HlsClient) implement the protocol on top. Clients live
// until the end of the run (their records are read at the end); a closed client just has no fd.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "context.h"
#include "rill/core/buffer.h"
#include "stats.h"
#include "url.h"

namespace rill::loadgen {

class Client : public IoHandler {
 public:
  Client(ThreadContext& ctx, ClientRecord& rec, const Endpoint& ep) : ctx_(ctx), rec_(rec), ep_(ep) {}
  virtual ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Starts connecting (records start_ns on the first call).
  void start();
  bool open() const { return fd_ >= 0; }
  const ClientRecord& record() const { return rec_; }
  // Fails a connection that has not reached streaming `timeout_ns` after it started.
  virtual void check_setup_timeout(int64_t now, int64_t timeout_ns);
  // The run is over: close without counting a drop.
  virtual void close_at_end();

 protected:
  virtual void on_connected() = 0;
  // Bytes read; may call fail() (then the client is closed and the rest is not delivered).
  virtual void on_data(std::span<const uint8_t> bytes) = 0;
  // The peer closed the connection (or reset it). Default: fail("eof").
  virtual void on_peer_closed();
  // Total bytes handed to the kernel so far (called after each successful write).
  virtual void on_written(uint64_t /*total*/) {}

  void send(BufferRef buf);
  void send_copy(std::span<const uint8_t> bytes);
  size_t queued_bytes() const { return queued_; }
  uint64_t bytes_written() const { return written_; }
  uint64_t bytes_queued_total() const { return written_ + queued_; }

  // Server accepted the play/publish: counted as streaming from now.
  void mark_streaming(int64_t now);
  // A player received a video frame (RTMP message or FLV tag) whose body starts with `head`:
  // counts it, records the first video / keyframe times and, in fanout, the latency of coded
  // frames (looked up by timestamp on the publisher's board).
  void count_video(uint32_t timestamp, std::span<const uint8_t> head, int64_t now);
  // Records the error kind, closes, and marks the record failed (before streaming) or dropped.
  void fail(std::string_view kind, std::string_view detail = {});
  // Closes the socket only (HTTP keep-alive lost: a subclass reconnects with start()).
  void close_socket();

  ThreadContext& ctx_;
  ClientRecord& rec_;

 private:
  void on_io(uint32_t events) override;
  void flush();
  void read_all(bool until_eof);

  Endpoint ep_;
  int fd_ = -1;
  bool connecting_ = false;
  bool counted_streaming_ = false;
  std::vector<BufferRef> out_;  // out_[0] is partly written up to out_off_
  size_t out_off_ = 0;
  size_t queued_ = 0;
  uint64_t written_ = 0;
};

}  // namespace rill::loadgen
