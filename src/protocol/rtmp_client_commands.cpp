// RtmpClientSession: the NetConnection and NetStream commands of a client (RTMP spec 1.0 §7.2):
// connect, createStream, play / publish, and the server's _result, _error and onStatus.
#include <algorithm>
#include <string>

#include "rill/protocol/error.h"
#include "rill/protocol/rtmp_client_session.h"

namespace rill::protocol {
namespace {

// Commands on chunk stream 3, stream commands (play, publish) on 8, as ffmpeg sends them.
constexpr uint32_t kCsidCommand = 3;
constexpr uint32_t kCsidStreamCommand = 8;

// 7.2.2.1 play: Start -2, "the server first tries to play the live stream ... If a live stream
// is not found, plays the recorded stream".
constexpr double kPlayLiveOrRecorded = -2;

// Answers to play / publish that end the attempt even from servers that send them with level
// "status" rather than "error".
constexpr std::string_view kFatalCodes[] = {
    "NetConnection.Connect.Rejected", "NetConnection.Connect.Failed", "NetStream.Play.StreamNotFound",
    "NetStream.Play.Failed",          "NetStream.Publish.BadName",    "NetStream.Publish.Denied",
};

bool is_fatal(std::string_view level, std::string_view code) {
  return level == "error" ||
         std::find(std::begin(kFatalCodes), std::end(kFatalCodes), code) != std::end(kFatalCodes);
}

std::string describe(const Amf0Value& v) { return v.to_debug_string(160); }

// The info object of onStatus / _error: the first argument, else the command object.
const Amf0Value* info_object(const RtmpCommand& c) {
  if (!c.args.empty() && c.args[0].has_properties()) return &c.args[0];
  if (c.command_object.has_properties()) return &c.command_object;
  return nullptr;
}

std::string info_string(const Amf0Value* info, std::string_view key) {
  if (!info) return {};
  auto v = info->find_string(key);
  return v ? std::string(*v) : std::string();
}

}  // namespace

// ---------------------------------------------------------------- sending

void RtmpClientSession::send_command(uint32_t stream_id, std::string_view name, double transaction_id,
                                     const Amf0Value& object, std::initializer_list<Amf0Value> args) {
  std::vector<uint8_t> body =
      encode_command(name, transaction_id, object, std::span(args.begin(), args.size()));
  send_message(msg_type::CommandAmf0, stream_id ? kCsidStreamCommand : kCsidCommand, stream_id, 0,
               SharedBuffer::copy_of(std::span<const uint8_t>(body)));
}

// A NetConnection command whose _result / _error we wait for; returns its transaction id.
double RtmpClientSession::send_tracked(std::string_view name, std::initializer_list<Amf0Value> args) {
  const double tx = next_transaction_++;
  pending_.push_back({tx, name});
  send_command(0, name, tx, Amf0Value::null(), args);
  return tx;
}

void RtmpClientSession::send_connect() {
  const bool publish = opt_.role == RtmpClientRole::Publish;
  Amf0Value obj = Amf0Value::object();
  obj.set("app", Amf0Value::string(opt_.app));
  obj.set("type", Amf0Value::string("nonprivate"));
  std::string flash = opt_.flash_ver;
  if (flash.empty()) flash = publish ? "FMLE/3.0 (compatible; rill)" : "LNX 9,0,124,2";
  obj.set("flashVer", Amf0Value::string(std::move(flash)));
  obj.set("tcUrl", Amf0Value::string(opt_.tc_url));
  if (!publish) {
    // What ffmpeg announces when it plays (7.2.1.1 connect command object).
    obj.set("fpad", Amf0Value::boolean(false));
    obj.set("capabilities", Amf0Value::number(15));
    obj.set("audioCodecs", Amf0Value::number(4071));
    obj.set("videoCodecs", Amf0Value::number(252));
    obj.set("videoFunction", Amf0Value::number(1));
    // E-RTMP: a relay passes every tag through, so it declares the FourCCs the server may refuse
    // a legacy player (AV1, VP9, Opus) and the others it carries.
    Amf0Value fourccs = Amf0Value::strict_array();
    for (const char* f : {"av01", "vp09", "hvc1", "avc1", "Opus", "mp4a"})
      fourccs.push_back(Amf0Value::string(f));
    obj.set("fourCcList", std::move(fourccs));
  }
  for (const Amf0Property& p : opt_.connect_extra) obj.set(p.key, p.value);
  // 7.2.1.1: "The transaction ID is always set to 1" for connect.
  next_transaction_ = 1;
  pending_.push_back({next_transaction_++, "connect"});
  send_command(0, "connect", 1, obj);
}

// ---------------------------------------------------------------- receiving

void RtmpClientSession::on_command(const RtmpMessage& m) {
  std::span<const uint8_t> body = m.payload.span();
  if (m.type_id == msg_type::CommandAmf3) {
    // 7.1.1: an AMF3 command message is a format byte (0) followed by AMF0 values.
    if (body.empty()) return;
    body = body.subspan(1);
  }
  RtmpCommand c;
  try {
    c = parse_command(body, opt_.amf0_limits);
  } catch (const ProtocolError& e) {
    throw ProtocolError("command message of " + std::to_string(m.payload.size()) + " bytes on stream " +
                        std::to_string(m.stream_id) + ": " + e.what());
  }
  if (c.name == "_result") return on_result(c);
  if (c.name == "_error") return on_error(c);
  if (c.name == "onStatus") return on_status_command(c);
  if (c.name == "onFCPublish" || c.name == "onFCUnpublish") {
    const Amf0Value* info = info_object(c);
    events_.on_status(info_string(info, "code"), info_string(info, "description"));
  }
  // onBWDone, _checkbw, onBWCheck, close, ...: nothing to answer.
}

std::optional<std::string_view> RtmpClientSession::take_pending(double transaction_id) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->transaction_id == transaction_id) {
      std::string_view name = it->name;
      pending_.erase(it);
      return name;
    }
  }
  return std::nullopt;
}

void RtmpClientSession::on_result(const RtmpCommand& c) {
  auto name = take_pending(c.transaction_id);
  if (!name) return;  // a reply we did not wait for
  const std::string_view n = *name;
  if (n == "connect" && state_ == RtmpClientState::Connecting) {
    on_connected();
  } else if (n == "createStream" && state_ == RtmpClientState::CreatingStream) {
    on_stream_created(c);
  }
  // releaseStream / FCPublish: nothing to do.
}

void RtmpClientSession::on_connected() {
  // 5.4.1: our chunk size, for what follows (media, for a publisher).
  if (opt_.out_chunk_size != out_chunk_size_) {
    send_message(msg_type::SetChunkSize, kControlCsid, 0, 0, set_chunk_size_payload(opt_.out_chunk_size));
    out_chunk_size_ = opt_.out_chunk_size;
  }
  if (opt_.role == RtmpClientRole::Publish) {
    // What ffmpeg and OBS send before createStream; servers that do not know them ignore them.
    send_tracked("releaseStream", {Amf0Value::string(opt_.stream)});
    send_tracked("FCPublish", {Amf0Value::string(opt_.stream)});
  }
  send_tracked("createStream");
  set_state(RtmpClientState::CreatingStream);
}

void RtmpClientSession::on_stream_created(const RtmpCommand& c) {
  // 7.2.1.3: the _result carries the message stream id after the command object.
  if (c.args.empty() || !c.args[0].is_number()) {
    throw ProtocolError(
        "createStream _result: expected the stream id (a number) after the command object, got " +
        (c.args.empty() ? std::string("nothing") : describe(c.args[0])));
  }
  const double id = c.args[0].as_number();
  if (!(id >= 1 && id <= 0xFFFFFF)) {
    throw ProtocolError("createStream _result: expected a stream id in 1..16777215, got " +
                        describe(c.args[0]));
  }
  stream_id_ = static_cast<uint32_t>(id);
  if (opt_.role == RtmpClientRole::Publish) {
    // 7.2.2.6 publish: name, type "live". Stream commands carry transaction id 0.
    send_command(stream_id_, "publish", 0, Amf0Value::null(),
                 {Amf0Value::string(opt_.stream), Amf0Value::string("live")});
  } else {
    send_command(stream_id_, "play", 0, Amf0Value::null(),
                 {Amf0Value::string(opt_.stream), Amf0Value::number(kPlayLiveOrRecorded)});
    // 7.1.7 SetBufferLength, as Flash and ffmpeg send it after play.
    send_message(msg_type::UserControl, kControlCsid, 0, 0,
                 user_control_payload(uc_event::SetBufferLength, stream_id_, opt_.play_buffer_ms));
  }
  set_state(RtmpClientState::Starting);
}

void RtmpClientSession::on_error(const RtmpCommand& c) {
  auto name = take_pending(c.transaction_id);
  if (!name) return;
  const std::string_view n = *name;
  // Historical Adobe commands: some servers answer them with _error; ffmpeg ignores that too.
  if (n == "releaseStream" || n == "FCPublish") return;
  const Amf0Value* info = info_object(c);
  std::string description = info_string(info, "description");
  fail(RtmpClientFailure::Kind::Refused, info_string(info, "code"),
       "_error in reply to " + std::string(n) + (description.empty() ? "" : ": " + description));
}

void RtmpClientSession::on_status_command(const RtmpCommand& c) {
  const Amf0Value* info = info_object(c);
  if (!info) {
    throw ProtocolError("onStatus: expected an info object (level, code, description), got " +
                        (c.args.empty() ? describe(c.command_object) : describe(c.args[0])));
  }
  const std::string code = info_string(info, "code");
  const std::string description = info_string(info, "description");
  events_.on_status(code, description);
  if (state_ == RtmpClientState::Failed || state_ == RtmpClientState::Closed) return;
  if (is_fatal(info_string(info, "level"), code)) {
    fail(RtmpClientFailure::Kind::StatusError, code, description);
    return;
  }
  if (state_ != RtmpClientState::Starting) return;
  // Publish.Start may also come in reply to FCPublish (before publish): only the one after
  // publish moves us on.
  const bool publish = opt_.role == RtmpClientRole::Publish;
  if ((publish && code == "NetStream.Publish.Start") || (!publish && code == "NetStream.Play.Start")) {
    set_state(RtmpClientState::Streaming);
  }
}

const char* RtmpClientSession::waiting_for() const {
  const bool publish = opt_.role == RtmpClientRole::Publish;
  switch (state_) {
    case RtmpClientState::Handshaking:
      return "S0S1S2 (handshake)";
    case RtmpClientState::Connecting:
      return "the _result of connect";
    case RtmpClientState::CreatingStream:
      return "the _result of createStream";
    case RtmpClientState::Starting:
      return publish ? "onStatus NetStream.Publish.Start" : "onStatus NetStream.Play.Start";
    default:
      return "nothing";
  }
}

}  // namespace rill::protocol
