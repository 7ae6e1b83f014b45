#pragma once
// rill-bench: one RTMP client connection, player or publisher, as a non-blocking state machine:
//   TCP connect -> handshake (protocol::ClientHandshake, complex like ffmpeg/librtmp)
//   -> connect -> createStream -> play | (releaseStream, FCPublish) publish -> streaming.
// Players answer PingRequest with PingResponse and acknowledge per the server's window; they
// read the chunk stream with ChunkScanner (media payloads are counted, not kept) and classify
// video from the first payload bytes. Publishers send the shared FlvSource in real time; their
// queue is bounded, so a slow server makes them fall behind instead of buffering without limit.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "chunk_scanner.h"
#include "client.h"
#include "flv_source.h"
#include "rill/protocol/rtmp_command.h"
#include "rill/protocol/rtmp_handshake.h"
#include "url.h"

namespace rill::bench {

class RtmpClient final : public Client, private ChunkScanner::Sink {
 public:
  enum class Role { Player, Publisher };

  // Publishers need `source`; players ignore it.
  RtmpClient(ThreadContext& ctx, ClientRecord& rec, const Endpoint& ep, Url url, Role role,
             std::shared_ptr<const FlvSource> source = nullptr);
  ~RtmpClient() override;

  // Publishers: sends every tag that is due by `now`, within the queue bound. Called from the
  // thread's pacing timer and after writes drain.
  void pump(int64_t now);
  // How far behind real time the publisher fell at worst (ms).
  double max_lag_ms() const { return double(max_lag_ns_) / 1e6; }

  static constexpr size_t kMaxQueuedBytes = 2 * 1024 * 1024;  // per publisher
  static constexpr uint32_t kOutChunkSize = 4096;

 private:
  enum class Phase { Handshake, Connect, CreateStream, Start, Streaming };

  void on_connected() override;
  void on_data(std::span<const uint8_t> bytes) override;
  void on_written(uint64_t total) override;
  void on_message(const ScannedMessage& m) override;

  void start_session();
  void on_command(const protocol::RtmpCommand& cmd);
  void on_status(const protocol::Amf0Value& info);
  void on_video(const ScannedMessage& m, int64_t now);
  void on_media(uint8_t type, uint32_t timestamp, std::span<const uint8_t> head, int64_t now);
  void on_aggregate(const ScannedMessage& m, int64_t now);
  void send_message(uint8_t type, uint32_t csid, uint32_t stream_id, uint32_t timestamp, const BufferRef& payload);
  void send_command(uint32_t stream_id, std::string_view name, double tx, const protocol::Amf0Value& obj,
                    std::initializer_list<protocol::Amf0Value> args = {});
  void begin_publishing(int64_t now);
  void maybe_ack();

  Url url_;
  Role role_;
  Phase phase_ = Phase::Handshake;
  std::unique_ptr<protocol::ClientHandshake> hs_;  // freed once done (it holds ~6 KB)
  ChunkScanner scanner_;
  uint32_t out_chunk_size_ = 128;
  uint32_t stream_id_ = 0;
  double next_tx_ = 1;
  double create_stream_tx_ = 0;
  uint32_t ack_window_ = 0;
  uint64_t acked_ = 0;
  uint32_t last_video_ts_ = 0;  // for the RILL_BENCH_DEBUG stall report
  static constexpr uint64_t kHandshakeBytes = 1 + 1536 * 2;  // S0 S1 S2

  // Publisher.
  std::shared_ptr<const FlvSource> source_;
  std::optional<FlvCursor> cursor_;
  int64_t publish_t0_ = 0;
  int64_t max_lag_ns_ = 0;
  std::deque<std::pair<uint64_t, uint32_t>> unsent_video_;  // (stream offset of the end, timestamp)
};

}  // namespace rill::bench
