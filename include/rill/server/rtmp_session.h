#pragma once
// RtmpSession: one RTMP connection — handshake, chunk stream, commands — adapted onto the hub.
// A publishing session feeds a media::Stream; a playing session is a media::Subscriber whose
// output queue holds the stream's shared, already-chunked buffers. The socket is a
// net::Connection (plain TCP, or TLS for RTMPS): the session sees bytes in and fills the
// connection's queue; the connection reads, writes and closes.
#include <memory>
#include <optional>
#include <string>

#include "rill/core/stream_log.h"
#include "rill/media/output_queue.h"
#include "rill/media/stream.h"
#include "rill/net/connection.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/chunk_reader.h"
#include "rill/protocol/rtmp_command.h"
#include "rill/protocol/rtmp_handshake.h"
#include "rill/protocol/rtmp_message.h"

namespace rill::server {

struct AdmissionRequest;
struct GateDecision;
class StreamGate;

class RtmpSession final : public net::Session, public net::ConnectionHandler, public media::Subscriber {
 public:
  // Every publish and play of the connection asks `gate`, which outlives the session.
  RtmpSession(net::WorkerCore& ctx, StreamGate& gate, std::unique_ptr<net::Connection> conn);
  ~RtmpSession() override;

  void start();
  void close(const char* reason) override;
  void drain() override;
  // A publisher gets onStatus NetStream.Unpublish.Success ("closed by the server's API") first.
  void kick(const char* reason) override;
  net::SessionInfo describe() const override;

  // net::ConnectionHandler
  void on_data(std::span<const uint8_t> bytes) override;
  void on_close(const std::string& reason) override;
  // media::Subscriber
  void on_frame(const media::FramePtr& frame) override;
  void on_gop_replay(bool active) override { queue_.set_replay(active); }
  void on_publish(media::Stream& s) override;
  void on_unpublish(media::Stream& s) override;
  void on_stream_end(media::Stream& s) override;

  const std::string& peer() const { return peer_; }

 private:
  enum class State { Handshake, Connected, Closed };

  static void on_tick_event(int fd, short what, void* arg);
  void handle_bytes(const uint8_t* data, size_t len);
  void handle_message(protocol::RtmpMessage&& msg);
  void handle_command(const protocol::RtmpMessage& msg);
  void handle_tick();

  // Commands (rtmp_session_commands.cpp)
  void cmd_connect(const protocol::RtmpCommand& c);
  void cmd_create_stream(const protocol::RtmpCommand& c);
  void cmd_publish(const protocol::RtmpCommand& c, uint32_t msid);
  void cmd_play(const protocol::RtmpCommand& c, uint32_t msid);
  void cmd_pause(const protocol::RtmpCommand& c);
  void cmd_close_stream(const char* why);
  void stop_publishing();
  void stop_playing();
  // Admission (server/stream_gate.h): the request for this connection, and the gate's answers.
  std::optional<media::StreamKey> stream_key_of(const protocol::RtmpCommand& c, uint32_t msid,
                                                const char* refusal, std::string& query);
  AdmissionRequest admission_request(const media::StreamKey& key, std::string query) const;
  void on_publish_decision(uint32_t msid, GateDecision d);
  void on_play_decision(uint32_t msid, GateDecision d);
  // Sets play_tracks_ from the play query's "track" (or the connect's capsEx); false after
  // refusing a bad value.
  bool choose_tracks(uint32_t msid, const std::string& query);

  // Output
  void send_message(uint8_t type, uint32_t csid, uint32_t msid, uint32_t ts, BufferRef payload);
  void send_message(uint8_t type, uint32_t csid, uint32_t msid, uint32_t ts,
                    std::span<const uint8_t> payload);
  void send_command(uint32_t csid, uint32_t msid, std::string_view name, double tid,
                    const protocol::Amf0Value& obj, std::span<const protocol::Amf0Value> args = {});
  void send_status(uint32_t msid, std::string_view level, std::string_view code,
                   std::string_view description);
  void send_user_control(uint16_t event, uint32_t value);
  void queue_control(BufferRef bytes);
  void close_after_flush(const char* reason);
  // Refuses with `close_reason` ("unknown app") after the flush; the access log says "refused: WHY".
  void refuse(const char* close_reason, std::string_view why);
  void log_access_end(const char* reason) const;  // the access log line (server/session_access.h)
  // The worker's log, scoped to app_/stream_name_ (the stream this session publishes or plays).
  core::StreamLog stream_log() const { return {*ctx_.log, app_ + "/" + stream_name_}; }

  net::WorkerCore& ctx_;
  StreamGate& gate_;
  std::unique_ptr<net::Connection> conn_;
  std::string peer_;
  State state_ = State::Handshake;
  net::EventPtr tick_ev_;
  int64_t started_ms_ = 0;
  int64_t last_read_ms_ = 0;
  int64_t last_ping_ms_ = 0;

  // Made at the first byte, dropped once done: ~1.6 KB that neither an idle connection nor a
  // playing one needs to keep.
  std::unique_ptr<protocol::ServerHandshake> handshake_;
  std::unique_ptr<protocol::HandshakeMac> own_mac_;  // for it, when the core has none
  std::unique_ptr<protocol::ChunkReader> reader_;
  media::OutputQueue& queue_;  // conn_->queue(): the connection writes what the session queues
  uint32_t out_chunk_size_ = 128;

  // Acknowledgement (§5.4.3): the peer's window, and the byte count we last acknowledged.
  uint32_t peer_ack_window_ = 0;
  uint64_t last_acked_ = 0;

  // connect
  std::string app_;
  std::string tc_url_;
  std::string page_url_;
  std::string flash_ver_;
  uint32_t relay_hops_ = 0;    // connect's "rill-hops": servers the media crossed (cluster loops)
  std::string connect_query_;  // "live?token=x": the query of the connect app, kept for the gate
  const config::AppConfig* app_cfg_ = nullptr;

  // publish / play
  uint32_t next_stream_id_ = 1;
  media::Stream* stream_ = nullptr;
  bool publishing_ = false;
  bool playing_ = false;
  // The client's connect declared Enhanced RTMP (fourCcList, video/audioFourCcInfoMap or capsEx):
  // it may be sent AV1, VP9 and Opus tags; a player that did not is refused them (on_frame).
  bool enhanced_client_ = false;
  bool refused_codec_ = false;  // such a refusal was sent: nothing more is queued
  // The connect's capsEx has CapsExMultitrack: it gets a multitrack publish's tags as sent;
  // another player gets track 0 (media/track_selection.h). "?track=N|all" on play overrides.
  bool multitrack_client_ = false;
  media::TrackSelection play_tracks_ = media::TrackSelection::one(0);
  // What it last published or played: a closed session is described by it (its byte totals go
  // on counting for that stream: workers/worker_monitor.h).
  net::SessionKind last_kind_ = net::SessionKind::Connecting;
  std::string last_stream_;
  bool paused_ = false;
  bool receive_audio_ = true;
  bool receive_video_ = true;
  bool wait_keyframe_ = false;  // after a drop-induced reset, skip video until a keyframe
  uint32_t play_msid_ = media::kRtmpPlayStreamId;
  std::string stream_name_;
  bool awaiting_gate_ = false;  // a publish or play waits for the gate's decision
  uint64_t gate_ticket_ = 0;    // its ticket, while it waits
  uint64_t frames_out_ = 0;
  bool closing_after_flush_ = false;
  // The access log's: the last publish or play asked for, its query redacted, and why it was
  // refused (empty: not refused).
  const char* access_command_ = "";
  std::string access_args_;
  std::string refusal_;
};

}  // namespace rill::server
