#include "rtmp_client.h"

#include <algorithm>
#include <cstdio>

#include "rill/protocol/amf0.h"
#include "rill/protocol/chunk_writer.h"
#include "rill/protocol/error.h"
#include "rill/protocol/flv_tag.h"
#include "rill/protocol/rtmp_message.h"

namespace rill::bench {

using namespace rill::protocol;

namespace {
// Chunk stream ids as ffmpeg uses them: commands 3, audio 4, video 6, data 5; play/publish 8.
constexpr uint32_t kCsidCommand = 3;
constexpr uint32_t kCsidAudio = 4;
constexpr uint32_t kCsidData = 5;
constexpr uint32_t kCsidVideo = 6;
constexpr uint32_t kCsidStream = 8;

uint32_t be24(const uint8_t* p) { return (uint32_t(p[0]) << 16) | (uint32_t(p[1]) << 8) | p[2]; }
}  // namespace

RtmpClient::RtmpClient(ThreadContext& ctx, ClientRecord& rec, const Endpoint& ep, Url url, Role role,
                       std::shared_ptr<const FlvSource> source)
    : Client(ctx, rec, ep), url_(std::move(url)), role_(role), source_(std::move(source)) {
  rec_.kind = role == Role::Player ? ClientRecord::Kind::RtmpPlayer : ClientRecord::Kind::Publisher;
}

RtmpClient::~RtmpClient() = default;

void RtmpClient::on_connected() {
  hs_ = std::make_unique<ClientHandshake>(system_random(), true);
  send(hs_->take_output());
}

void RtmpClient::on_data(std::span<const uint8_t> bytes) {
  try {
    if (hs_) {
      size_t used = hs_->feed(bytes);
      if (hs_->has_output()) send(hs_->take_output());
      if (!hs_->done()) return;
      hs_.reset();
      bytes = bytes.subspan(used);
      start_session();
      if (!open()) return;
    }
    if (!bytes.empty()) scanner_.feed(bytes, *this);
  } catch (const std::exception& e) {  // ProtocolError from the codecs, and anything unexpected
    fail("protocol", e.what());
    return;
  }
  if (open()) maybe_ack();
}

void RtmpClient::maybe_ack() {
  if (!ack_window_) return;
  uint64_t total = kHandshakeBytes + scanner_.bytes_received();
  if (total - acked_ >= ack_window_) {
    acked_ = total;
    send_message(msg_type::Ack, kControlCsid, 0, 0, ack_payload(static_cast<uint32_t>(total)));
  }
}

void RtmpClient::send_message(uint8_t type, uint32_t csid, uint32_t stream_id, uint32_t timestamp,
                              const BufferRef& payload) {
  RtmpMessage m;
  m.type_id = type;
  m.csid = csid;
  m.stream_id = stream_id;
  m.timestamp = timestamp;
  m.payload = payload;
  send(ChunkWriter::serialize(m, out_chunk_size_));
}

void RtmpClient::send_command(uint32_t stream_id, std::string_view name, double tx, const Amf0Value& obj,
                              std::initializer_list<Amf0Value> args) {
  std::vector<Amf0Value> a(args);
  auto body = encode_command(name, tx, obj, a);
  send_message(msg_type::CommandAmf0, stream_id ? kCsidStream : kCsidCommand, stream_id, 0,
               SharedBuffer::copy_of(std::span<const uint8_t>(body)));
}

void RtmpClient::start_session() {
  phase_ = Phase::Connect;
  if (role_ == Role::Publisher) {
    send_message(msg_type::SetChunkSize, kControlCsid, 0, 0, set_chunk_size_payload(kOutChunkSize));
    out_chunk_size_ = kOutChunkSize;
  }
  Amf0Value obj = Amf0Value::object();
  obj.set("app", Amf0Value::string(url_.app));
  if (role_ == Role::Publisher) {
    obj.set("type", Amf0Value::string("nonprivate"));
    obj.set("flashVer", Amf0Value::string("FMLE/3.0 (compatible; rill-bench)"));
    obj.set("tcUrl", Amf0Value::string(url_.tc_url()));
  } else {
    obj.set("flashVer", Amf0Value::string("LNX 9,0,124,2"));
    obj.set("tcUrl", Amf0Value::string(url_.tc_url()));
    obj.set("fpad", Amf0Value::boolean(false));
    obj.set("capabilities", Amf0Value::number(15));
    obj.set("audioCodecs", Amf0Value::number(4071));
    obj.set("videoCodecs", Amf0Value::number(252));
    obj.set("videoFunction", Amf0Value::number(1));
  }
  send_command(0, "connect", next_tx_++, obj);
}

void RtmpClient::on_message(const ScannedMessage& m) {
  int64_t now = now_ns();
  switch (m.type_id) {
    case msg_type::Audio:
      on_media(m.type_id, m.timestamp, m.head, now);
      break;
    case msg_type::Video:
      on_media(m.type_id, m.timestamp, m.head, now);
      break;
    case msg_type::Aggregate:
      on_aggregate(m, now);
      break;
    case msg_type::UserControl: {
      auto ev = parse_user_control(m.body);
      if (ev.event == uc_event::PingRequest) {
        send_message(msg_type::UserControl, kControlCsid, 0, 0, user_control_payload(uc_event::PingResponse, ev.value1));
      }
      break;
    }
    case msg_type::WindowAckSize:
      ack_window_ = parse_window_ack_size(m.body);
      break;
    case msg_type::CommandAmf0:
      on_command(parse_command(m.body));
      break;
    case msg_type::CommandAmf3:
      // AMF3 command messages carry AMF0 after a leading format byte (spec 7.1.1).
      if (!m.body.empty()) on_command(parse_command(m.body.subspan(1)));
      break;
    default:
      break;  // Set Chunk Size (applied by the scanner), Ack, Set Peer Bandwidth, data, ...
  }
}

void RtmpClient::on_media(uint8_t type, uint32_t timestamp, std::span<const uint8_t> head, int64_t now) {
  if (phase_ != Phase::Streaming && role_ == Role::Player) {
    // A server that sends media without NetStream.Play.Start: playing anyway.
    phase_ = Phase::Streaming;
    mark_streaming(now);
  }
  if (type == msg_type::Audio) {
    ++rec_.audio;
    return;
  }
  ++rec_.video;
  if (!rec_.first_video_ns) rec_.first_video_ns = now;
  if (ctx_.debug && rec_.last_media_ns && now - rec_.last_media_ns > rec_.stall_threshold_ns) {
    std::fprintf(stderr, "rill-bench: stall: %.0f ms without video, %.0f ms after play; timestamps %u -> %u\n",
                 double(now - rec_.last_media_ns) / 1e6, double(now - rec_.play_ns) / 1e6, last_video_ts_, timestamp);
  }
  last_video_ts_ = timestamp;
  rec_.on_media(now);
  VideoTagInfo info;
  try {
    info = parse_video_tag(head);
  } catch (const ProtocolError&) {
    return;  // unknown codec or short: counted, not classified
  }
  if (info.is_keyframe && !rec_.first_key_ns) rec_.first_key_ns = now;
  if (ctx_.board && info.is_coded_frame) {
    if (auto sent = ctx_.board->lookup(timestamp); sent && *sent >= rec_.play_ns) {
      ctx_.latency.add_ns(now - *sent);
    }
  }
}

void RtmpClient::on_aggregate(const ScannedMessage& m, int64_t now) {
  // Spec 7.1.6: FLV-style sub-messages; timestamps rebased on the aggregate's.
  std::span<const uint8_t> b = m.body;
  bool first = true;
  uint32_t base = 0;
  while (b.size() >= 11) {
    uint8_t type = b[0];
    uint32_t size = be24(&b[1]);
    uint32_t ts = be24(&b[4]) | (uint32_t(b[7]) << 24);
    if (b.size() < 11 + size + 4) throw ProtocolError("aggregate: truncated sub-message");
    if (first) {
      base = ts;
      first = false;
    }
    if (type == msg_type::Audio || type == msg_type::Video) {
      on_media(type, m.timestamp + (ts - base), b.subspan(11, std::min<size_t>(size, ChunkScanner::kHeadBytes)), now);
    }
    b = b.subspan(11 + size + 4);
  }
}

void RtmpClient::on_command(const RtmpCommand& cmd) {
  int64_t now = now_ns();
  if (cmd.name == "_result") {
    if (phase_ == Phase::Connect && cmd.transaction_id == 1) {
      phase_ = Phase::CreateStream;
      if (role_ == Role::Publisher) {
        // What ffmpeg and OBS send before createStream; servers that do not know them ignore them.
        send_command(0, "releaseStream", next_tx_++, Amf0Value::null(), {Amf0Value::string(url_.stream)});
        send_command(0, "FCPublish", next_tx_++, Amf0Value::null(), {Amf0Value::string(url_.stream)});
      }
      create_stream_tx_ = next_tx_++;
      send_command(0, "createStream", create_stream_tx_, Amf0Value::null());
    } else if (phase_ == Phase::CreateStream && cmd.transaction_id == create_stream_tx_) {
      stream_id_ = static_cast<uint32_t>(cmd.arg_number(0, 1));
      phase_ = Phase::Start;
      rec_.play_ns = now;
      if (role_ == Role::Publisher) {
        send_command(stream_id_, "publish", next_tx_++, Amf0Value::null(),
                     {Amf0Value::string(url_.stream), Amf0Value::string("live")});
      } else {
        send_command(stream_id_, "play", next_tx_++, Amf0Value::null(),
                     {Amf0Value::string(url_.stream), Amf0Value::number(-2)});
        send_message(msg_type::UserControl, kControlCsid, 0, 0,
                     user_control_payload(uc_event::SetBufferLength, stream_id_, 3000));
      }
    }
    return;
  }
  if (cmd.name == "_error") {
    const Amf0Value* info = cmd.args.empty() ? nullptr : &cmd.args[0];
    auto code = info ? info->find_string("code") : std::nullopt;
    fail("rtmp_error:" + std::string(code ? *code : "unknown"));
    return;
  }
  if (cmd.name == "onStatus") {
    if (!cmd.args.empty()) on_status(cmd.args[0]);
    else if (cmd.command_object.has_properties()) on_status(cmd.command_object);
  }
  // onBWDone, onFCPublish, _checkbw, |RtmpSampleAccess ...: nothing to do.
}

void RtmpClient::on_status(const Amf0Value& info) {
  auto level = info.find_string("level");
  auto code = info.find_string("code");
  std::string c(code ? *code : "");
  if (level && *level == "error") {
    fail("rtmp:" + c);
    return;
  }
  int64_t now = now_ns();
  if (role_ == Role::Player && c == "NetStream.Play.Start" && phase_ != Phase::Streaming) {
    phase_ = Phase::Streaming;
    mark_streaming(now);
  } else if (role_ == Role::Publisher && c == "NetStream.Publish.Start" && phase_ != Phase::Streaming) {
    begin_publishing(now);
  }
}

void RtmpClient::begin_publishing(int64_t now) {
  phase_ = Phase::Streaming;
  mark_streaming(now);
  publish_t0_ = now;
  cursor_.emplace(source_);
  for (const auto& t : source_->preamble()) {
    if (t.type == kFlvTagScript) {
      // Metadata goes out as @setDataFrame, as ffmpeg and OBS send it.
      std::vector<uint8_t> body;
      Amf0Encoder(body).write_string("@setDataFrame");
      body.insert(body.end(), t.body.data(), t.body.data() + t.body.size());
      send_message(msg_type::DataAmf0, kCsidData, stream_id_, 0, SharedBuffer::copy_of(std::span<const uint8_t>(body)));
    } else {
      send_message(t.type, t.type == kFlvTagVideo ? kCsidVideo : kCsidAudio, stream_id_, 0, t.body);
    }
  }
  pump(now);
}

void RtmpClient::pump(int64_t now) {
  if (phase_ != Phase::Streaming || role_ != Role::Publisher || !open() || !cursor_ || cursor_->empty()) return;
  while (true) {
    int64_t due = publish_t0_ + static_cast<int64_t>(cursor_->due_ms()) * kNsPerMs;
    if (due > now) break;
    if (queued_bytes() >= kMaxQueuedBytes) {
      max_lag_ns_ = std::max(max_lag_ns_, now - due);
      break;
    }
    max_lag_ns_ = std::max(max_lag_ns_, now - due);
    const SourceTag& t = cursor_->tag();
    uint32_t ts = cursor_->timestamp();
    bool video = t.type == kFlvTagVideo;
    send_message(t.type, video ? kCsidVideo : kCsidAudio, stream_id_, ts, t.body);
    if (!open()) return;
    if (video) {
      ++rec_.video;
      if (ctx_.board) {
        if (queued_bytes() == 0) {
          ctx_.board->record(ts, now_ns());  // written to the kernel right away
        } else {
          unsent_video_.emplace_back(bytes_queued_total(), ts);
        }
      }
    } else {
      ++rec_.audio;
    }
    rec_.on_media(now);
    cursor_->advance();
  }
}

void RtmpClient::on_written(uint64_t total) {
  if (!unsent_video_.empty()) {
    int64_t now = now_ns();
    while (!unsent_video_.empty() && unsent_video_.front().first <= total) {
      if (ctx_.board) ctx_.board->record(unsent_video_.front().second, now);
      unsent_video_.pop_front();
    }
  }
}

}  // namespace rill::bench
