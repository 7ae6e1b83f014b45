#pragma once
// net::Connection: one socket of a worker, whatever it speaks (RTMP, the worker link; RTMPS and
// HTTPS, server-to-server pulls later). It owns the descriptor and its libevent events, reads in
// bounded slices and hands the bytes to its handler, and writes a media::OutputQueue of shared,
// already-serialized buffers.
//
// Two flavours share this interface: PlainConnection (TCP or Unix; the queue's buffers go out
// with one sendmsg/writev, never copied) and TlsConnection (tls_connection.h: OpenSSL over the
// same non-blocking socket). They differ by one virtual call per read slice and one per flush,
// never by one per buffer: the RTMP fan-out to a thousand players stays as cheap as a bare fd.
//
// Writes are batched: send() and request_flush() ask the worker's FlushScheduler, which calls
// flush() once the callbacks ready in this iteration have run — request_flush() after the merge
// hold (`merge_writes`, docs/architecture.md), send() and flush_now() in this iteration. A write that would
// block arms the write event and the queue keeps the rest; a partly written buffer resumes mid-buffer.
//
// Life cycle: Open, then Closed — at once (close(), EOF, an error) or through Closing
// (close_after_flush(): no more reading, what is queued goes out, then the socket closes).
// The handler's on_close() runs exactly once for every end it did not ask for with close(): EOF,
// a read, write or TLS error, the end of close_after_flush(). The socket is closed by then.
// A handler may close or even destroy the connection from inside any of its callbacks.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rill/core/buffer.h"
#include "rill/media/output_queue.h"
#include "rill/net/file_body.h"
#include "rill/net/flush_scheduler.h"
#include "rill/net/socket.h"

struct event_base;

namespace rill::net {

class ConnectionHandler {
 public:
  // Bytes from the peer (decrypted, for TLS), at most Connection::kReadSlice at a time.
  virtual void on_data(std::span<const uint8_t> bytes) = 0;
  // The connection is over: "peer closed", "read: <errno text>", "write: ...", "tls ...", or the
  // reason given to close_after_flush().
  virtual void on_close(const std::string& reason) = 0;
  // Everything queued reached the kernel (an open connection): HTTP/1.1 starts reading the
  // next request, a pending file (send_file) is done.
  virtual void on_drained() {}

 protected:
  ~ConnectionHandler() = default;
};

class Connection : public Flushable {
 public:
  enum class State : uint8_t { Open, Closing, Closed };
  static constexpr size_t kReadSlice = 64 * 1024;
  static constexpr size_t kMaxReadPerEvent = 1024 * 1024;  // fairness between connections

  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts reading (TLS: the handshake) and flushes what was queued before.
  void start(ConnectionHandler& handler);

  // ---- output
  // The queue the session fills (its drop policy applies there); request_flush() after pushing.
  media::OutputQueue& queue() { return queue_; }
  const media::OutputQueue& queue() const { return queue_; }
  // New bounds (an RTMP app's queue settings, known after connect); what is queued stays.
  void set_queue_limits(const media::QueueLimits& limits);
  // Protocol bytes that are never dropped: queued, flushed in this loop iteration (never held).
  void send(BufferRef bytes);
  // Media queued: flushed after the worker's merge hold (video paces it), at once when the
  // player fell behind (FlushScheduler::request_frame) unless the socket is full (then its
  // writability flushes it).
  void request_flush(bool video = false) {
    if (state_ != State::Closed) flusher_.request_frame(this, video, write_armed_ ? 0 : queue_.duration_ms());
  }
  // Flushes in this loop iteration whatever the merge hold: a new player's first burst.
  void flush_now() {
    if (state_ != State::Closed) flusher_.request_now(this);
  }
  // A body from a file, sent after what is queued with sendfile(2): the kernel references the
  // file's pages instead of copying bytes (an HLS segment that hundreds of clients fetch). True
  // when taken; false where this flavour cannot (TLS encrypts bytes, not files) or a file is
  // already pending — the caller then queues the bytes. Nothing may be queued behind it before
  // on_drained(): the queue would overtake the file.
  virtual bool send_file(std::shared_ptr<const FileBody> /*file*/) { return false; }
  // Back-pressure: bytes accepted but not yet handed to the kernel.
  size_t queued_bytes() const {
    return queue_.bytes() + staged_bytes_ + (file_ ? file_->size - file_sent_ : 0);
  }

  // ---- input
  // Stops delivering bytes (a decision is pending) until resume_reading(); the kernel buffers.
  void pause_reading();
  void resume_reading();
  bool reading() const { return reading_; }

  // ---- end
  // Closes now, dropping what is queued; on_close() is not called (the caller knows).
  void close(std::string_view reason);
  // Stops reading, writes what is queued, then closes and reports on_close(reason).
  void close_after_flush(std::string_view reason);
  State state() const { return state_; }
  bool is_open() const { return state_ == State::Open; }
  const std::string& close_reason() const { return close_reason_; }

  const std::string& peer() const { return peer_; }
  int fd() const { return fd_.get(); }  // for socket options; -1 once closed
  virtual bool secure() const { return false; }
  uint64_t bytes_in() const { return bytes_in_; }  // application bytes (TLS: decrypted)
  uint64_t bytes_out() const { return bytes_out_; }

 protected:
  Connection(event_base* base, FlushScheduler& flusher, UniqueFd fd, std::string peer);

  struct ReadResult {
    enum Status : uint8_t { Data, Again, Eof, Error };
    Status status = Again;
    size_t n = 0;       // Data: bytes read
    bool more = true;   // Data: more may be ready without waiting for the socket
    std::string error;  // Error: what failed ("read: Connection reset by peer")
  };
  // One read of at most len bytes.
  virtual ReadResult read_some(uint8_t* buf, size_t len) = 0;
  // Input that the socket's readiness no longer shows (TLS: decrypted bytes OpenSSL holds).
  virtual bool buffered_input() const { return false; }
  // Whether the read event should be armed (TLS adds: a handshake, a write wanting a read).
  virtual bool wants_read_event() const { return state_ == State::Open && reading_; }
  // Event entry points; the TLS flavour adds its handshake and crossed wants.
  virtual void on_readable() { read_loop(); }
  virtual void on_writable() { flush(); }
  // Last words before the descriptor closes (TLS: close_notify). Not called from ~Connection.
  virtual void before_close() {}

  // Reads and delivers until the socket is drained, the budget is spent, reading stops or the
  // connection ends. False when the connection closed or was destroyed meanwhile.
  bool read_loop();
  // Runs f, which may end with the handler destroying this connection: false if it did.
  template <typename F>
  bool survives(F&& f);
  void wait_writable(bool on);
  // The queue is empty: stop waiting for writability (unless pinned), finish a close_after_flush().
  void flushed();
  // Delivers input held outside the socket on the next loop turn (TLS after its handshake).
  void kick_read();
  // EOF or an I/O error: close and report once.
  void fail(std::string reason);
  void update_read_event();

  FlushScheduler& flusher_;
  UniqueFd fd_;
  media::OutputQueue queue_;
  size_t staged_bytes_ = 0;               // TLS: taken from the queue into the record being written
  std::shared_ptr<const FileBody> file_;  // plain: sent once the queue is empty (send_file)
  size_t file_sent_ = 0;
  uint64_t bytes_in_ = 0;
  uint64_t bytes_out_ = 0;
  State state_ = State::Open;
  bool reading_ = false;
  bool write_event_pinned_ = false;  // TLS: a read waits for writability; flushed() keeps the event

 private:
  static void on_read_event(int fd, short what, void* arg);
  static void on_write_event(int fd, short what, void* arg);
  void finish(std::string reason);  // close, then on_close(reason)
  void teardown();                  // close without a handler call or a virtual (destructor)

  std::string peer_;
  std::string close_reason_;
  ConnectionHandler* handler_ = nullptr;
  EventPtr read_ev_;
  EventPtr write_ev_;
  bool read_armed_ = false;
  bool write_armed_ = false;
  // Set while a callback runs: the destructor clears it, so the callers on the stack return
  // without touching the destroyed connection (each level passes it to the outer one).
  bool* alive_ = nullptr;
};

template <typename F>
bool Connection::survives(F&& f) {
  bool alive = true;
  bool* outer = std::exchange(alive_, &alive);
  f();
  if (!alive) {
    if (outer) *outer = false;
    return false;
  }
  alive_ = outer;
  return true;
}

// TCP or Unix stream socket: reads with read(), writes the queue's buffers in place.
class PlainConnection final : public Connection {
 public:
  PlainConnection(event_base* base, FlushScheduler& flusher, UniqueFd fd, std::string peer)
      : Connection(base, flusher, std::move(fd), std::move(peer)) {}
  // One sendmsg per IOV_MAX buffers until the queue is empty or the socket is full. Inside a
  // FlushScheduler batch with an io_uring, the send is prepared there and continues in ring_sent().
  // A pending file (send_file) follows the queue: the queue's last send carries MSG_MORE, so the
  // head and the start of the body leave in one segment, and sendfile goes on from there.
  void flush() override;
  bool send_file(std::shared_ptr<const FileBody> file) override;

 private:
  ReadResult read_some(uint8_t* buf, size_t len) override;
  void ring_sent(int result) override;
  // A write of the queue returned w (bytes, or -errno): consume, wait for writability, or fail.
  // True: go on.
  bool sent(ssize_t w);
  // w ≤ 0 from any write: true for EINTR (retry); else waits for writability or fails, false.
  bool write_failed(ssize_t w);
  // sendfile until the pending file is out (true) or the socket is full or failed (false).
  bool send_file_rest();
};

}  // namespace rill::net
