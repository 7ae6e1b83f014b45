#pragma once
// rill-bench: one RTMP client connection, player or publisher: the socket half (Client) adapted
// onto the library's sans-I/O protocol::RtmpClientSession, which does the handshake, the command
// flow, acknowledgements and pings.
//
// Players read in header-only mode (only the first kHeadBytes of each audio/video payload are
// kept, so thousands of players cost little memory), count frames and classify video from those
// bytes. Publishers send the shared FlvSource in real time; their queue is bounded, so a slow
// server makes them fall behind instead of buffering without limit.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <utility>

#include "client.h"
#include "flv_source.h"
#include "rill/protocol/rtmp_client_session.h"
#include "url.h"

namespace rill::loadgen {

class RtmpClient final : public Client, private protocol::RtmpClientEvents {
 public:
  enum class Role { Player, Publisher };

  // Publishers need `source`; players ignore it.
  RtmpClient(ThreadContext& ctx, ClientRecord& rec, const Endpoint& ep, const Url& url, Role role,
             std::shared_ptr<const FlvSource> source = nullptr);
  ~RtmpClient() override;

  // Publishers: sends every tag that is due by `now`, within the queue bound. Called from the
  // thread's pacing timer and after writes drain.
  void pump(int64_t now);
  // How far behind real time the publisher fell at worst (ms).
  double max_lag_ms() const { return double(max_lag_ns_) / 1e6; }
  // The session's connect timeout (same length, counted from connect()), then Client's.
  void check_setup_timeout(int64_t now, int64_t timeout_ns) override;
  // Ends the session politely (deleteStream; FCUnpublish first for publishers), then closes.
  void close_at_end() override;

  static constexpr size_t kMaxQueuedBytes = 2 * 1024 * 1024;  // per publisher
  static constexpr uint32_t kOutChunkSize = 4096;
  static constexpr uint32_t kHeadBytes = 16;  // media bytes a player keeps: enough to classify

 private:
  // Client
  void on_connected() override;
  void on_data(std::span<const uint8_t> bytes) override;
  void on_peer_closed() override;
  void on_written(uint64_t total) override;
  // protocol::RtmpClientEvents
  void on_state(protocol::RtmpClientState state) override;
  void on_media(protocol::RtmpMessage&& m, uint32_t length) override;

  void flush_session();  // the session's output onto the socket
  void on_failed();
  void on_frame(uint8_t type, uint32_t timestamp, std::span<const uint8_t> head, int64_t now);
  void begin_publishing(int64_t now);
  void send_tag(const SourceTag& tag, uint32_t timestamp, int64_t now);

  Role role_;
  protocol::RtmpClientSession session_;
  uint32_t last_video_ts_ = 0;  // for the RILL_BENCH_DEBUG stall report

  // Publisher.
  std::shared_ptr<const FlvSource> source_;
  std::optional<FlvCursor> cursor_;
  int64_t publish_t0_ = 0;
  int64_t max_lag_ns_ = 0;
  std::deque<std::pair<uint64_t, uint32_t>> unsent_video_;  // (stream offset of the end, timestamp)
};

}  // namespace rill::loadgen
