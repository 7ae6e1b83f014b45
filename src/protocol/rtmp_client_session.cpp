// RtmpClientSession: lifecycle, bytes in and out, protocol control and user control messages,
// media, timeouts. The command flow (connect, createStream, play/publish) is in
// rtmp_client_commands.cpp.
#include "rill/protocol/rtmp_client_session.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "rill/protocol/chunk_writer.h"
#include "rill/protocol/error.h"

namespace rill::protocol {
namespace {

// Chunk stream ids as ffmpeg uses them: commands 3, audio 4, data 5, video 6.
constexpr uint32_t kCsidAudio = 4;
constexpr uint32_t kCsidData = 5;
constexpr uint32_t kCsidVideo = 6;

// S0 + S1 + S2 (5.2.2 - 5.2.4).
constexpr uint64_t kServerHandshakeBytes = 1 + 2 * kHandshakeSize;

bool starts_with_set_data_frame(std::span<const uint8_t> body) {
  static constexpr uint8_t kMarker[] = {0x02, 0x00, 0x0D, '@', 's', 'e', 't', 'D',
                                        'a',  't',  'a',  'F', 'r', 'a', 'm', 'e'};
  return body.size() >= sizeof kMarker && std::equal(kMarker, kMarker + sizeof kMarker, body.begin());
}

}  // namespace

const char* to_string(RtmpClientState s) {
  switch (s) {
    case RtmpClientState::Idle:
      return "idle";
    case RtmpClientState::Handshaking:
      return "handshaking";
    case RtmpClientState::Connecting:
      return "connecting";
    case RtmpClientState::CreatingStream:
      return "creating stream";
    case RtmpClientState::Starting:
      return "starting";
    case RtmpClientState::Streaming:
      return "streaming";
    case RtmpClientState::Failed:
      return "failed";
    case RtmpClientState::Closed:
      return "closed";
  }
  return "?";
}

const char* to_string(RtmpClientFailure::Kind k) {
  using K = RtmpClientFailure::Kind;
  switch (k) {
    case K::None:
      return "none";
    case K::Protocol:
      return "protocol error";
    case K::Refused:
      return "refused";
    case K::StatusError:
      return "status error";
    case K::Timeout:
      return "timeout";
    case K::PeerClosed:
      return "peer closed";
  }
  return "?";
}

std::string RtmpClientFailure::to_string() const {
  std::string s = std::string(protocol::to_string(phase)) + ": " + protocol::to_string(kind);
  if (!code.empty()) s += " " + code;
  if (!detail.empty()) s += ": " + detail;
  return s;
}

RtmpClientSession::RtmpClientSession(RtmpClientOptions options, RtmpClientEvents& events)
    : opt_(std::move(options)),
      events_(events),
      // Header-only mode always; a prefix of 2^32 - 1 bytes keeps every payload whole.
      reader_([this](RtmpMessage&& m, uint32_t length) { on_message(std::move(m), length); },
              opt_.media_prefix ? opt_.media_prefix : UINT32_MAX, opt_.reader_limits) {
  if (!opt_.random) opt_.random = system_random();
}

RtmpClientSession::~RtmpClientSession() = default;

// ---------------------------------------------------------------- lifecycle

void RtmpClientSession::start(int64_t now_ms) {
  if (state_ != RtmpClientState::Idle) return;
  deadline_ms_ = now_ms + opt_.connect_timeout_ms;
  HandshakeMac* mac = opt_.handshake_mac;
  if (!mac) mac = (own_mac_ = std::make_unique<HandshakeMac>()).get();
  handshake_ = std::make_unique<ClientHandshake>(opt_.random, *mac, opt_.complex_handshake);
  out_.push_back(handshake_->take_output());  // C0C1
  set_state(RtmpClientState::Handshaking);
}

void RtmpClientSession::poll(int64_t now_ms) {
  auto deadline = next_deadline_ms();
  if (!deadline || now_ms < *deadline) return;
  std::string got;
  if (state_ == RtmpClientState::Handshaking) {
    got = ", got " + std::to_string(bytes_in_) + " of " + std::to_string(kServerHandshakeBytes) + " bytes";
  }
  fail(RtmpClientFailure::Kind::Timeout, {},
       "connect timeout of " + std::to_string(opt_.connect_timeout_ms) + " ms passed waiting for " +
           waiting_for() + got);
}

std::optional<int64_t> RtmpClientSession::next_deadline_ms() const {
  switch (state_) {
    case RtmpClientState::Handshaking:
    case RtmpClientState::Connecting:
    case RtmpClientState::CreatingStream:
    case RtmpClientState::Starting:
      return deadline_ms_;
    default:
      return std::nullopt;
  }
}

void RtmpClientSession::transport_closed() {
  if (state_ == RtmpClientState::Failed || state_ == RtmpClientState::Closed) return;
  std::string detail = "the connection closed";
  if (state_ != RtmpClientState::Streaming && state_ != RtmpClientState::Idle) {
    detail += " while waiting for " + std::string(waiting_for());
  }
  fail(RtmpClientFailure::Kind::PeerClosed, {}, std::move(detail));
}

void RtmpClientSession::close() {
  if (state_ == RtmpClientState::Failed || state_ == RtmpClientState::Closed) return;
  if (state_ == RtmpClientState::Streaming) {
    // 7.2.2.3 deleteStream; FCUnpublish first, as ffmpeg and OBS end a publish.
    if (opt_.role == RtmpClientRole::Publish) {
      send_command(0, "FCUnpublish", 0, Amf0Value::null(), {Amf0Value::string(opt_.stream)});
    }
    send_command(0, "deleteStream", 0, Amf0Value::null(), {Amf0Value::number(stream_id_)});
  }
  set_state(RtmpClientState::Closed);
}

void RtmpClientSession::set_state(RtmpClientState s) {
  if (s == state_) return;
  state_ = s;
  events_.on_state(s);
}

void RtmpClientSession::fail(RtmpClientFailure::Kind kind, std::string code, std::string detail) {
  if (state_ == RtmpClientState::Failed || state_ == RtmpClientState::Closed) return;
  failure_.kind = kind;
  failure_.phase = state_;
  failure_.code = std::move(code);
  failure_.detail = std::move(detail);
  handshake_.reset();
  own_mac_.reset();
  set_state(RtmpClientState::Failed);
}

// ---------------------------------------------------------------- bytes in

void RtmpClientSession::feed(std::span<const uint8_t> bytes) {
  if (state_ == RtmpClientState::Idle || state_ == RtmpClientState::Failed ||
      state_ == RtmpClientState::Closed) {
    return;
  }
  bytes_in_ += bytes.size();
  try {
    if (handshake_) feed_handshake(bytes);
    if (!bytes.empty() && !handshake_) reader_.feed(bytes);
  } catch (const ProtocolError& e) {
    fail(RtmpClientFailure::Kind::Protocol, {},
         std::string(e.what()) + " (after " + std::to_string(bytes_in_) + " bytes from the server)");
    return;
  }
  if (state_ != RtmpClientState::Failed && state_ != RtmpClientState::Closed) maybe_acknowledge();
}

void RtmpClientSession::feed_handshake(std::span<const uint8_t>& bytes) {
  size_t used = handshake_->feed(bytes);
  if (handshake_->has_output()) out_.push_back(handshake_->take_output());  // C2
  bytes = bytes.subspan(used);
  if (!handshake_->done()) return;
  server_digest_ok_ = handshake_->server_digest_ok();
  handshake_.reset();
  own_mac_.reset();
  // 5.2.1: "The client MUST wait until S2 has been received before sending any other data."
  send_connect();
  set_state(RtmpClientState::Connecting);
}

void RtmpClientSession::maybe_acknowledge() {
  // 5.4.4: "The peer MUST send an Acknowledgement after receiving bytes equal to the window size."
  if (ack_window_ == 0 || bytes_in_ - acked_ < ack_window_) return;
  acked_ = bytes_in_;
  // 5.4.3: the sequence number is the number of bytes received so far (it wraps at 32 bits).
  send_message(msg_type::Ack, kControlCsid, 0, 0, ack_payload(static_cast<uint32_t>(bytes_in_)));
}

void RtmpClientSession::on_message(RtmpMessage&& m, uint32_t length) {
  if (state_ == RtmpClientState::Failed || state_ == RtmpClientState::Closed) return;
  switch (m.type_id) {
    case msg_type::WindowAckSize:
      ack_window_ = parse_window_ack_size(m.payload.span());
      return;
    case msg_type::SetPeerBandwidth: {
      // 5.4.5: "The peer receiving this message SHOULD respond with a Window Acknowledgement Size
      // message if the window size is different from the last one sent to the sender."
      PeerBandwidth bw = parse_set_peer_bandwidth(m.payload.span());
      if (bw.window != window_sent_) {
        window_sent_ = bw.window;
        send_message(msg_type::WindowAckSize, kControlCsid, 0, 0, window_ack_size_payload(bw.window));
      }
      return;
    }
    case msg_type::UserControl:
      on_user_control(m);
      return;
    case msg_type::CommandAmf0:
    case msg_type::CommandAmf3:
      on_command(m);
      return;
    case msg_type::Audio:
    case msg_type::Video:
    case msg_type::DataAmf0:
    case msg_type::DataAmf3:
    case msg_type::Aggregate:
      on_media_message(std::move(m), length);
      return;
    default:
      // Set Chunk Size and Abort (applied by the reader), Acknowledgement, shared objects.
      return;
  }
}

void RtmpClientSession::on_user_control(const RtmpMessage& m) {
  UserControlEvent ev = parse_user_control(m.payload.span());
  if (ev.event == uc_event::PingRequest) {
    // 7.1.7: "The client sends this event in response to the ping request. The event data is a
    // 4-byte timestamp, which was received with the PingRequest request."
    send_message(msg_type::UserControl, kControlCsid, 0, 0,
                 user_control_payload(uc_event::PingResponse, ev.value1));
    return;
  }
  if (ev.event == uc_event::PingResponse) return;
  events_.on_stream_event(ev);
}

void RtmpClientSession::on_media_message(RtmpMessage&& m, uint32_t length) {
  if (opt_.role != RtmpClientRole::Play) return;
  if (state_ == RtmpClientState::Starting &&
      (m.type_id == msg_type::Audio || m.type_id == msg_type::Video || m.type_id == msg_type::Aggregate)) {
    // A server that sends media without NetStream.Play.Start: playing anyway.
    set_state(RtmpClientState::Streaming);
  }
  if (state_ != RtmpClientState::Starting && state_ != RtmpClientState::Streaming) return;
  events_.on_media(std::move(m), length);
}

// ---------------------------------------------------------------- bytes out

void RtmpClientSession::send_message(uint8_t type, uint32_t csid, uint32_t stream_id, uint32_t timestamp,
                                     BufferRef payload) {
  RtmpMessage m;
  m.type_id = type;
  m.csid = csid;
  m.stream_id = stream_id;
  m.timestamp = timestamp;
  m.payload = std::move(payload);
  out_.push_back(ChunkWriter::serialize(m, out_chunk_size_));
}

bool RtmpClientSession::send_media(uint8_t type, uint32_t timestamp, const BufferRef& body) {
  if (opt_.role != RtmpClientRole::Publish || state_ != RtmpClientState::Streaming) return false;
  switch (type) {
    case msg_type::Audio:
      send_message(type, kCsidAudio, stream_id_, timestamp, body);
      return true;
    case msg_type::Video:
      send_message(type, kCsidVideo, stream_id_, timestamp, body);
      return true;
    case msg_type::DataAmf0: {
      if (starts_with_set_data_frame(body.span())) {
        send_message(type, kCsidData, stream_id_, timestamp, body);
        return true;
      }
      std::vector<uint8_t> prefix;
      Amf0Encoder(prefix).write_string("@setDataFrame");
      BufferRef b = SharedBuffer::create(prefix.size() + body.size());
      b->append(prefix);
      b->append(body.span());
      send_message(type, kCsidData, stream_id_, timestamp, std::move(b));
      return true;
    }
    default:
      return false;
  }
}

std::vector<BufferRef> RtmpClientSession::take_output() { return std::exchange(out_, {}); }

void RtmpClientSession::take_output(std::vector<BufferRef>& out) {
  for (BufferRef& b : out_) out.push_back(std::move(b));
  out_.clear();
}

}  // namespace rill::protocol
