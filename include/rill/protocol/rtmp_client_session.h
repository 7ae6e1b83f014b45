#pragma once
// RtmpClientSession: the client side of one RTMP connection as a sans-I/O state machine - no
// sockets, no clock reads. The owner moves bytes and time in and out:
//
//   start(now_ms)            queues C0C1 and arms the connect timeout
//   feed(bytes)              server bytes; callbacks fire from inside
//   take_output()            buffers to write, in order (writev them as they are: zero-copy)
//   poll(now_ms)             fails the session once the connect timeout has passed
//   send_media(type, ts, b)  publishers, once Streaming
//
// Flow (RTMP spec 1.0): handshake (5.2, protocol::ClientHandshake), connect (7.2.1.1), Set Chunk
// Size for our chunks (5.4.1), createStream (7.2.1.3), then play (7.2.2.1) or releaseStream +
// FCPublish + publish (7.2.2.6; the first two are what ffmpeg and OBS send). Replies are matched
// by transaction id; onStatus moves Starting to Streaming (NetStream.Play.Start /
// NetStream.Publish.Start), any onStatus of level "error" or an _error reply to connect,
// createStream, play or publish fails the session with what the server said.
//
// Protocol control from the server is applied here: Set Chunk Size (by the chunk reader), Window
// Acknowledgement Size -> Acknowledgement every window (5.4.3, counting every byte received,
// handshake included), Set Peer Bandwidth -> Window Acknowledgement Size when it differs from the
// one sent (5.4.5), PingRequest -> PingResponse (7.1.7).
//
// Input is bounded (chunk reader limits, AMF0 limits as the server uses them). Malformed input
// never throws out of feed(): the session goes to Failed with a RtmpClientFailure that names the
// phase, what was expected and what came.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rill/core/buffer.h"
#include "rill/protocol/amf0.h"
#include "rill/protocol/chunk_reader.h"
#include "rill/protocol/rtmp_command.h"
#include "rill/protocol/rtmp_handshake.h"
#include "rill/protocol/rtmp_message.h"

namespace rill::protocol {

enum class RtmpClientRole : uint8_t { Play, Publish };

enum class RtmpClientState : uint8_t {
  Idle,            // constructed, start() not called yet
  Handshaking,     // C0C1 sent, waiting for S0S1S2
  Connecting,      // connect sent, waiting for its _result
  CreatingStream,  // createStream sent, waiting for its _result
  Starting,        // play / publish sent, waiting for NetStream.Play.Start / Publish.Start
  Streaming,       // media flows
  Failed,          // see failure(); terminal
  Closed,          // close() was called; terminal
};
const char* to_string(RtmpClientState s);

// Why a session failed.
struct RtmpClientFailure {
  enum class Kind : uint8_t {
    None,
    Protocol,     // malformed or over-limit server bytes (a ProtocolError)
    Refused,      // _error in reply to connect, createStream, play or publish
    StatusError,  // onStatus with level "error" (StreamNotFound, BadName, Connect.Rejected ...)
    Timeout,      // the connect timeout passed before Streaming
    PeerClosed,   // the owner reported the transport closed (transport_closed())
  };
  Kind kind = Kind::None;
  RtmpClientState phase = RtmpClientState::Idle;  // the state the session was in
  std::string code;    // what the server said, e.g. "NetStream.Play.StreamNotFound"; may be empty
  std::string detail;  // expected / got, the server's description, the ProtocolError text

  // "starting: status error NetStream.Play.StreamNotFound: no stream x".
  std::string to_string() const;
};
const char* to_string(RtmpClientFailure::Kind k);

struct RtmpClientOptions {
  RtmpClientRole role = RtmpClientRole::Play;
  std::string app;     // connect's "app", e.g. "live" (may carry "?query")
  std::string tc_url;  // connect's "tcUrl", e.g. "rtmp://host:1935/live"
  std::string stream;  // the play / publish name (may carry "?query")
  // connect's "flashVer"; empty: "FMLE/3.0 (compatible; rill)" to publish, "LNX 9,0,124,2" to play.
  std::string flash_ver;
  // Appended to connect's command object (e.g. the cluster's hop counter).
  Amf0Value::Properties connect_extra;
  // Handshake + connect + play/publish answered must fit in this.
  int64_t connect_timeout_ms = 10'000;
  // Our chunk size, announced with Set Chunk Size once connect succeeded (128: not announced).
  uint32_t out_chunk_size = 4096;
  // Players: SetBufferLength sent after play (7.1.7), in ms.
  uint32_t play_buffer_ms = 3000;
  // 0: media payloads are delivered whole. N > 0: audio/video payloads keep only their first N
  // bytes (ChunkReader header-only mode); on_media still gets the full length.
  uint32_t media_prefix = 0;
  bool complex_handshake = true;
  ChunkReaderLimits reader_limits{};
  // As the server parses commands: shallow, strings up to 64 KiB.
  Amf0Limits amf0_limits{.max_depth = 16, .max_string = 64 * 1024};
  // Handshake randomness; empty: system_random().
  RandomFill random;
  // The complex handshake's HMAC, shared by the owner's sessions on one thread (handshake_mac.h);
  // null: the session sets up its own for its handshake.
  HandshakeMac* handshake_mac = nullptr;
};

// What the session tells its owner. Called synchronously from start(), feed(), poll(),
// transport_closed() and close(). A callback may call send_media(), take_output() and close(),
// but must not call feed() or destroy the session.
class RtmpClientEvents {
 public:
  // Every state change; on Failed, session.failure() says why.
  virtual void on_state(RtmpClientState state) = 0;
  // Every onStatus (and onFCPublish) the server sends, whatever the state.
  virtual void on_status(std::string_view /*code*/, std::string_view /*description*/) {}
  // Players, Starting/Streaming: audio (8), video (9), data (18, 15: onMetaData,
  // |RtmpSampleAccess) and aggregate (22) messages, as they came. `length` is the message length;
  // payload.size() is smaller only for audio/video under media_prefix.
  virtual void on_media(RtmpMessage&& /*m*/, uint32_t /*length*/) {}
  // User control events other than pings: StreamBegin, StreamEOF, StreamDry, ... (7.1.7).
  virtual void on_stream_event(const UserControlEvent& /*ev*/) {}

 protected:
  ~RtmpClientEvents() = default;
};

class RtmpClientSession {
 public:
  RtmpClientSession(RtmpClientOptions options, RtmpClientEvents& events);
  ~RtmpClientSession();
  RtmpClientSession(const RtmpClientSession&) = delete;
  RtmpClientSession& operator=(const RtmpClientSession&) = delete;

  // Idle -> Handshaking: queues C0C1; the connect timeout runs from now_ms.
  void start(int64_t now_ms);
  // Server bytes. Ignored before start() and once Failed or Closed.
  void feed(std::span<const uint8_t> bytes);
  // Fails with Timeout once now_ms reaches next_deadline_ms().
  void poll(int64_t now_ms);
  // When poll() must be called next at the latest; nullopt when no timeout is armed.
  std::optional<int64_t> next_deadline_ms() const;
  // The transport closed: Failed (PeerClosed), unless already Failed or Closed.
  void transport_closed();
  // Ends politely: while Streaming, FCUnpublish + deleteStream (publisher) or deleteStream
  // (player) are queued. Then Closed.
  void close();

  // Publishers, Streaming only (false otherwise, nothing queued): one audio (8), video (9) or
  // data (18) message with an FLV tag body, serialized at out_chunk_size() (one buffer, copied
  // into chunks). Data is sent as "@setDataFrame" + body, as ffmpeg and OBS send onMetaData
  // (unless the body already starts with it). A body over 0xFFFFFF bytes is a caller error
  // (std::invalid_argument from ChunkWriter).
  bool send_media(uint8_t type, uint32_t timestamp, const BufferRef& body);

  // Buffers to write, in order; the session keeps none of them.
  std::vector<BufferRef> take_output();
  // Same, appended to `out` (reuses the caller's vector).
  void take_output(std::vector<BufferRef>& out);
  bool has_output() const { return !out_.empty(); }

  RtmpClientState state() const { return state_; }
  const RtmpClientFailure& failure() const { return failure_; }
  const RtmpClientOptions& options() const { return opt_; }
  // Message stream id from createStream's _result (0 before).
  uint32_t stream_id() const { return stream_id_; }
  // Every byte fed so far, handshake included (the Acknowledgement sequence number, 5.4.3).
  uint64_t bytes_received() const { return bytes_in_; }
  uint32_t in_chunk_size() const { return reader_.chunk_size(); }
  uint32_t out_chunk_size() const { return out_chunk_size_; }
  // True when the server's S1/S2 carried valid digests (complex handshake).
  bool server_digest_ok() const { return server_digest_ok_; }

 private:
  struct Pending {  // a command waiting for _result / _error
    double transaction_id;
    std::string_view name;  // a literal of rtmp_client_commands.cpp
  };

  // rtmp_client_session.cpp: bytes, control messages, output, timeouts.
  void feed_handshake(std::span<const uint8_t>& bytes);
  void on_message(RtmpMessage&& m, uint32_t length);
  void on_user_control(const RtmpMessage& m);
  void on_media_message(RtmpMessage&& m, uint32_t length);
  void maybe_acknowledge();
  void send_message(uint8_t type, uint32_t csid, uint32_t stream_id, uint32_t timestamp, BufferRef payload);
  void set_state(RtmpClientState s);
  void fail(RtmpClientFailure::Kind kind, std::string code, std::string detail);

  // rtmp_client_commands.cpp: the NetConnection / NetStream command flow.
  void send_command(uint32_t stream_id, std::string_view name, double transaction_id, const Amf0Value& object,
                    std::initializer_list<Amf0Value> args = {});
  double send_tracked(std::string_view name, std::initializer_list<Amf0Value> args = {});
  void send_connect();
  void on_command(const RtmpMessage& m);
  void on_result(const RtmpCommand& c);
  void on_error(const RtmpCommand& c);
  void on_status_command(const RtmpCommand& c);
  void on_connected();
  void on_stream_created(const RtmpCommand& c);
  std::optional<std::string_view> take_pending(double transaction_id);
  const char* waiting_for() const;

  RtmpClientOptions opt_;
  RtmpClientEvents& events_;
  RtmpClientState state_ = RtmpClientState::Idle;
  RtmpClientFailure failure_;
  std::unique_ptr<ClientHandshake> handshake_;  // freed once done (it holds ~6 KB)
  std::unique_ptr<HandshakeMac> own_mac_;        // for it, without options().handshake_mac
  bool server_digest_ok_ = false;
  ChunkReader reader_;
  std::vector<BufferRef> out_;
  uint32_t out_chunk_size_ = 128;  // 5.4.1: until we send Set Chunk Size
  uint64_t bytes_in_ = 0;
  int64_t deadline_ms_ = 0;  // connect timeout; armed from start() until Streaming

  // Acknowledgement (5.4.3) and Set Peer Bandwidth (5.4.5).
  uint32_t ack_window_ = 0;   // the server's Window Acknowledgement Size; 0: never acknowledge
  uint64_t acked_ = 0;        // bytes_in_ at the last Acknowledgement
  uint32_t window_sent_ = 0;  // the last Window Acknowledgement Size we sent

  std::vector<Pending> pending_;
  double next_transaction_ = 1;
  uint32_t stream_id_ = 0;
};

}  // namespace rill::protocol
