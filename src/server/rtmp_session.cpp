// RtmpSession: socket I/O, handshake, chunk stream and protocol control messages.
// Commands (connect, publish, play ...) are in rtmp_session_commands.cpp.
#include "rill/server/rtmp_session.h"

#include <event2/event.h>

#include <algorithm>

#include "rill/protocol/chunk_writer.h"
#include "rill/protocol/error.h"
#include "rill/server/session_access.h"
#include "rill/server/stream_gate.h"

namespace rill::server {

RtmpSession::RtmpSession(net::WorkerCore& ctx, StreamGate& gate, std::unique_ptr<net::Connection> conn)
    : net::Session(net::SessionProtocol::Rtmp),
      ctx_(ctx),
      gate_(gate),
      conn_(std::move(conn)),
      peer_(conn_->peer()),
      queue_(conn_->queue()) {}

RtmpSession::~RtmpSession() {
  if (state_ != State::Closed) close("destroyed");
}

void RtmpSession::start() {
  const auto& rc = ctx_.config->rtmp;
  started_ms_ = last_read_ms_ = ctx_.timers->now_ms();
  tick_ev_.reset(event_new(ctx_.base, -1, EV_PERSIST, &RtmpSession::on_tick_event, this));
  // One periodic tick per session drives the handshake timeout, pings and the idle timeout.
  // A quarter of the shortest period keeps each timeout within 25% of its setting.
  int64_t shortest = std::min<int64_t>(rc.handshake_timeout.count(), rc.idle_timeout.count());
  if (rc.ping_interval.count() > 0) shortest = std::min<int64_t>(shortest, rc.ping_interval.count());
  int64_t tick_ms = shortest / 4;
  tick_ms = std::clamp<int64_t>(tick_ms, 100, 2500);
  timeval tv{static_cast<time_t>(tick_ms / 1000), static_cast<suseconds_t>((tick_ms % 1000) * 1000)};
  event_add(tick_ev_.get(), &tv);
  conn_->start(*this);
  ctx_.log->debug("rtmp: {} connected", peer_);
}

void RtmpSession::close(const char* reason) {
  if (state_ == State::Closed) return;
  state_ = State::Closed;
  if (publishing_ || playing_ || stream_) {
    stream_log().info("rtmp: {} closed ({}) stream={} {} frames_out={} dropped={}", peer_, reason,
                      stream_ ? stream_->key_text() : std::string("-"), publishing_ ? "publisher" : "player",
                      frames_out_, queue_.frames_dropped());
  } else {
    ctx_.log->debug("rtmp: {} closed ({})", peer_, reason);
  }
  if (!handshake_ && reader_) log_access_end(reason);  // past the handshake (a scan is not logged)
  if (gate_ticket_) gate_.cancel(std::exchange(gate_ticket_, 0));
  stop_publishing();
  stop_playing();
  tick_ev_.reset();
  conn_->close(reason);
  ctx_.sessions->retire(this);
}

void RtmpSession::drain() {
  // A graceful stop ends players and publishers alike: the new worker generation takes over.
  close("worker shutting down");
}

void RtmpSession::kick(const char* reason) {
  if (!publishing_ || closing_after_flush_) return close(reason);
  // The publish's message stream: createStream gives 1 to the first stream of a connection,
  // which is the one encoders publish on.
  send_status(media::kRtmpPlayStreamId, "status", "NetStream.Unpublish.Success", std::string("closed: ") + reason);
  close_after_flush(reason);
}

void RtmpSession::refuse(const char* close_reason, std::string_view why) {
  refusal_ = "refused: ";
  refusal_ += why;
  close_after_flush(close_reason);
}

void RtmpSession::log_access_end(const char* reason) const {
  core::SessionAccess a;
  a.peer = peer_;
  a.protocol = conn_->secure() ? "rtmps" : "rtmp";
  a.command = access_command_;
  a.app = app_;
  a.name = stream_name_;
  a.args = access_args_;
  a.bytes_in = conn_->bytes_in();
  a.bytes_out = conn_->bytes_out();
  a.duration_ms = ctx_.timers->now_ms() - started_ms_;
  a.close_reason = refusal_.empty() ? std::string_view(reason) : std::string_view(refusal_);
  a.agent = flash_ver_;
  a.referer = page_url_;
  log_session_end(ctx_, a);
}

void RtmpSession::close_after_flush(const char* reason) {
  closing_after_flush_ = true;
  conn_->close_after_flush(reason);  // then on_close(reason)
}

net::SessionInfo RtmpSession::describe() const {
  net::SessionInfo i;
  i.id = id();
  const bool closed = state_ == State::Closed;  // stopped publishing or playing on the way out
  i.kind = publishing_ ? net::SessionKind::Publisher
           : playing_  ? net::SessionKind::Player
           : closed    ? last_kind_
                       : net::SessionKind::Connecting;
  i.protocol = conn_->secure() ? "rtmps" : "rtmp";
  i.peer = peer_;
  if (stream_) {
    i.stream = stream_->key_text();
  } else if (closed) {
    i.stream = last_stream_;
  }
  i.since_ms = started_ms_;
  i.bytes_in = conn_->bytes_in();
  i.bytes_out = conn_->bytes_out();
  i.queued_bytes = conn_->queued_bytes();
  i.frames_out = frames_out_;
  i.dropped_frames = queue_.frames_dropped();
  return i;
}

// ---------------------------------------------------------------- input

void RtmpSession::on_close(const std::string& reason) { close(reason.c_str()); }

void RtmpSession::on_data(std::span<const uint8_t> bytes) {
  if (state_ == State::Closed || closing_after_flush_) return;
  last_read_ms_ = ctx_.timers->now_ms();
  try {
    handle_bytes(bytes.data(), bytes.size());
  } catch (const protocol::ProtocolError& e) {
    ctx_.log->warn("rtmp: {} protocol error, closing: {}", peer_, e.what());
    close("protocol error");
  }
}

void RtmpSession::handle_bytes(const uint8_t* data, size_t len) {
  if (state_ == State::Handshake) {
    if (!handshake_) {
      protocol::HandshakeMac* mac = ctx_.handshake_mac;
      if (!mac) mac = (own_mac_ = std::make_unique<protocol::HandshakeMac>()).get();
      handshake_ = std::make_unique<protocol::ServerHandshake>(protocol::system_random(), *mac);
    }
    size_t used = handshake_->feed({data, len});
    if (handshake_->has_output()) queue_control(handshake_->take_output());
    if (!handshake_->done()) return;
    handshake_.reset();
    own_mac_.reset();
    state_ = State::Connected;
    protocol::ChunkReaderLimits lim;
    lim.max_message_size = static_cast<uint32_t>(ctx_.config->rtmp.max_message_size);
    lim.max_chunk_size = ctx_.config->rtmp.max_chunk_size;
    reader_ = std::make_unique<protocol::ChunkReader>(
        [this](protocol::RtmpMessage&& m) {
          if (state_ == State::Closed || closing_after_flush_) return;
          handle_message(std::move(m));
        },
        lim);
    reader_->use_pool(ctx_.frame_pool);
    data += used;
    len -= used;
    if (len == 0) return;
  }
  if (state_ != State::Connected) return;
  reader_->feed({data, len});
  // §5.4.3: acknowledge after every window of received bytes.
  if (peer_ack_window_ && reader_->bytes_received() - last_acked_ >= peer_ack_window_) {
    last_acked_ = reader_->bytes_received();
    auto ack = protocol::ack_payload(static_cast<uint32_t>(last_acked_));
    send_message(protocol::msg_type::Ack, 2, 0, 0, ack);
  }
}

void RtmpSession::handle_message(protocol::RtmpMessage&& msg) {
  using namespace protocol;
  switch (msg.type_id) {
    case msg_type::Audio:
    case msg_type::Video:
      if (publishing_ && stream_) {
        stream_->publish(msg.type_id == msg_type::Audio ? media::MediaType::Audio : media::MediaType::Video, msg.timestamp,
                         std::move(msg.payload));
      }
      return;
    case msg_type::DataAmf0:
      if (publishing_ && stream_) stream_->publish(media::MediaType::Data, msg.timestamp, std::move(msg.payload));
      return;
    case msg_type::CommandAmf0:
      handle_command(msg);
      return;
    case msg_type::CommandAmf3:
      // AMF3 command: a format byte (0) then AMF0 values (§7.1.1, as FMS clients send it).
      if (msg.payload.size() > 0) {
        RtmpMessage m = msg;
        m.payload = SharedBuffer::copy_of(msg.payload.span().subspan(1));
        handle_command(m);
      }
      return;
    case msg_type::DataAmf3:
      if (publishing_ && stream_ && msg.payload.size() > 1) {
        stream_->publish(media::MediaType::Data, msg.timestamp,
                         SharedBuffer::copy_of(msg.payload.span().subspan(1)));
      }
      return;
    case msg_type::Aggregate:
      for (auto& sub : split_aggregate(msg)) handle_message(std::move(sub));
      return;
    case msg_type::WindowAckSize:
      peer_ack_window_ = parse_window_ack_size(msg.payload.span());
      return;
    case msg_type::UserControl: {
      auto uc = parse_user_control(msg.payload.span());
      if (uc.event == uc_event::PingRequest) {
        send_message(msg_type::UserControl, 2, 0, 0, user_control_payload(uc_event::PingResponse, uc.value1));
      }
      return;
    }
    case msg_type::SetChunkSize:  // applied by the reader
    case msg_type::Abort:         // applied by the reader
    case msg_type::Ack:
    case msg_type::SetPeerBandwidth:
      return;
    default:
      ctx_.log->debug("rtmp: {} ignoring message type {}", peer_, msg.type_id);
      return;
  }
}

void RtmpSession::on_tick_event(int, short, void* arg) { static_cast<RtmpSession*>(arg)->handle_tick(); }

void RtmpSession::handle_tick() {
  const auto& rc = ctx_.config->rtmp;
  int64_t now = ctx_.timers->now_ms();
  if (state_ == State::Handshake) {
    if (now - started_ms_ >= rc.handshake_timeout.count()) {
      ctx_.log->warn("rtmp: {} handshake timeout after {} ms, closing", peer_, now - started_ms_);
      close("handshake timeout");
    }
    return;
  }
  int64_t silent = now - last_read_ms_;
  if (silent >= rc.idle_timeout.count()) {
    ctx_.log->warn("rtmp: {} idle for {} ms, closing", peer_, silent);
    close("idle timeout");
    return;
  }
  // ping_interval 0: never ping.
  if (rc.ping_interval.count() > 0 && silent >= rc.ping_interval.count() &&
      now - last_ping_ms_ >= rc.ping_interval.count()) {
    last_ping_ms_ = now;
    send_user_control(protocol::uc_event::PingRequest, static_cast<uint32_t>(now));
  }
}

// ---------------------------------------------------------------- output

void RtmpSession::send_message(uint8_t type, uint32_t csid, uint32_t msid, uint32_t ts, BufferRef payload) {
  protocol::RtmpMessage m;
  m.type_id = type;
  m.csid = csid;
  m.stream_id = msid;
  m.timestamp = ts;
  m.payload = std::move(payload);
  queue_control(protocol::ChunkWriter::serialize(m, out_chunk_size_));
}

void RtmpSession::send_message(uint8_t type, uint32_t csid, uint32_t msid, uint32_t ts,
                               std::span<const uint8_t> payload) {
  send_message(type, csid, msid, ts, SharedBuffer::copy_of(payload));
}

void RtmpSession::send_command(uint32_t csid, uint32_t msid, std::string_view name, double tid,
                               const protocol::Amf0Value& obj, std::span<const protocol::Amf0Value> args) {
  auto body = protocol::encode_command(name, tid, obj, args);
  send_message(protocol::msg_type::CommandAmf0, csid, msid, 0, body);
}

void RtmpSession::send_status(uint32_t msid, std::string_view level, std::string_view code,
                              std::string_view description) {
  protocol::Amf0Value info = protocol::status_info(level, code, description);
  if (!stream_name_.empty()) info.set("details", protocol::Amf0Value::string(stream_name_));
  info.set("clientid", protocol::Amf0Value::string("rill"));
  protocol::Amf0Value args[] = {info};
  send_command(5, msid, "onStatus", 0, protocol::Amf0Value::null(), args);
}

void RtmpSession::send_user_control(uint16_t ev, uint32_t value) {
  send_message(protocol::msg_type::UserControl, 2, 0, 0, protocol::user_control_payload(ev, value));
}

void RtmpSession::queue_control(BufferRef bytes) {
  if (state_ == State::Closed) return;
  conn_->send(std::move(bytes));
}

}  // namespace rill::server
