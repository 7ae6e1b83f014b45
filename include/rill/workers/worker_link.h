#pragma once
// WorkerLink: the pulling side of the worker link. One per stream per worker, shared by every local
// subscriber of that stream: it connects to the owning worker's Unix socket, sends
// "PLAY app/name" and becomes the *publisher* of this worker's local media::Stream, feeding it
// the frames it reads. Local players (RTMP, HTTP-FLV, later HLS) are ordinary subscribers of that
// stream and get the GOP cache, timeline continuity and the slow-consumer policy as usual.
//
//   Waiting  --owner found in the table (polled every poll_interval)--> Requested
//   Requested --Publish frame--> Live (attach_publisher: players get PublishNotify)
//   Live/Requested --Unpublish, End, Error, EOF, malformed frame, timeout--> Waiting
//                    (detach_publisher: players get UnpublishNotify and the stream idles)
//
// The link asks to be closed (on_idle) once the stream has had no local subscriber for
// idle_grace; meanwhile it tells the owner that nobody here watches (WATCHING 0), so that what the
// owner lingers after its last viewer does not wait for this grace too. Its socket is a net::PlainConnection (reads of at most 64 KiB, 1 MiB per event);
// frame bodies are limited like RTMP messages.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rill/workers/ownership_table.h"
#include "rill/config/config.h"
#include "rill/net/connection.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/worker_link_frame.h"

namespace rill::workers {

struct WorkerLinkOptions {
  OwnershipTable* table = nullptr;
  int self_slot = 0;
  pid_t self_pid = 0;
  std::string runtime_dir;
  std::chrono::milliseconds poll_interval{200};
  std::chrono::milliseconds idle_grace{5000};
  std::chrono::milliseconds request_timeout{5000};  // connected, but no Publish frame yet
  uint32_t max_frame_body = 16 * 1024 * 1024;
};

class WorkerLink final : private net::ConnectionHandler {
 public:
  enum class State { Waiting, Requested, Live };

  WorkerLink(net::WorkerCore& ctx, media::StreamKey key, const config::AppConfig& cfg,
            WorkerLinkOptions opts, std::function<void(WorkerLink&)> on_idle);
  ~WorkerLink();
  WorkerLink(const WorkerLink&) = delete;
  WorkerLink& operator=(const WorkerLink&) = delete;

  // Attach to the local stream now as its publisher (the owner is known to exist), then connect.
  // Returns the stream, or nullptr if another local publisher holds it.
  media::Stream* start_attached(const OwnershipTable::Owner& owner);
  // Start without attaching: poll the table until somebody publishes the stream.
  void start_waiting();
  // Detach from the stream and close the connection (a local publisher takes over, or the
  // worker stops). The link does nothing after this; destroy it.
  void shutdown(const char* why);

  const std::string& key() const { return key_; }  // "app/name"
  const media::StreamKey& stream_key() const { return skey_; }
  State state() const { return state_; }
  bool attached() const { return stream_ != nullptr; }
  const char* state_name() const;
  int owner_slot() const { return owner_ ? owner_->slot : -1; }
  pid_t owner_pid() const { return owner_ ? owner_->pid : 0; }
  uint64_t frames_in() const { return frames_in_; }
  uint64_t bytes_in() const { return bytes_in_; }
  uint64_t connects() const { return connects_; }
  size_t local_subscribers() const;

 private:
  void on_data(std::span<const uint8_t> bytes) override;
  void on_close(const std::string& reason) override;
  void on_message(protocol::LinkMessage&& m);
  bool connect_to(const OwnershipTable::Owner& owner);
  void disconnect(const std::string& why, bool poll_soon);
  bool attach();
  void detach();
  void tick();
  void schedule_tick(std::chrono::milliseconds after);
  void tell_watching(bool watching);

  net::WorkerCore& ctx_;
  media::StreamKey skey_;
  std::string key_;
  const config::AppConfig& cfg_;
  WorkerLinkOptions opts_;
  std::function<void(WorkerLink&)> on_idle_;
  State state_ = State::Waiting;
  bool stopped_ = false;
  std::unique_ptr<net::Connection> conn_;
  std::unique_ptr<protocol::LinkFrameReader> reader_;
  media::Stream* stream_ = nullptr;  // non-null while attached as the stream's publisher
  std::optional<OwnershipTable::Owner> owner_;
  std::optional<TimerId> tick_timer_;
  int64_t requested_ms_ = 0;
  int64_t last_connect_ms_ = -1000000;
  uint32_t quiet_failures_ = 0;  // link losses since the last Publish (log throttling)
  std::optional<int64_t> idle_since_ms_;
  bool told_watching_ = true;  // the last WATCHING note the owner has (protocol/worker_link_note.h)
  // Set by a control frame inside feed(); acted upon once feed() returns.
  const char* terminal_ = nullptr;
  uint64_t frames_in_ = 0;
  uint64_t bytes_in_ = 0;
  uint64_t connects_ = 0;
};

}  // namespace rill::workers
