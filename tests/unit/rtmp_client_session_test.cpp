// RtmpClientSession against a scripted server built from the protocol pieces (ServerHandshake,
// ChunkReader, ChunkWriter, AMF0): every byte goes through the real codecs, in memory.
#include "rill/protocol/rtmp_client_session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "rill/protocol/amf0.h"
#include "rill/protocol/chunk_reader.h"
#include "rill/protocol/chunk_writer.h"
#include "rill/protocol/rtmp_command.h"
#include "rill/protocol/rtmp_handshake.h"
#include "rill/protocol/rtmp_message.h"

using namespace rill;
using namespace rill::protocol;

namespace {

using Bytes = std::vector<uint8_t>;
using State = RtmpClientState;
using Kind = RtmpClientFailure::Kind;

RandomFill counter_random(uint8_t seed) {
  return [seed](std::span<uint8_t> out) mutable {
    for (auto& b : out) b = seed++;
  };
}

Bytes pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 13);
  return b;
}

Bytes to_bytes(const BufferRef& b) { return Bytes(b.data(), b.data() + b.size()); }

// The server half: handshake, a chunk reader for what the client sends, and helpers that write
// replies the way an RTMP server does.
class ScriptedServer {
 public:
  struct Received {
    RtmpMessage msg;
    std::optional<RtmpCommand> command;  // for command messages
  };

  ScriptedServer() : reader_([this](RtmpMessage&& m) { on_client_message(std::move(m)); }) {}

  // Client bytes in. Returns false while the handshake is incomplete.
  void feed(std::span<const uint8_t> bytes) {
    client_bytes += bytes.size();
    if (!handshake_.done()) {
      size_t used = handshake_.feed(bytes);
      if (handshake_.has_output()) {
        BufferRef s = handshake_.take_output();
        out_.insert(out_.end(), s.data(), s.data() + s.size());
      }
      bytes = bytes.subspan(used);
    }
    if (handshake_.done() && !bytes.empty()) reader_.feed(bytes);
  }

  Bytes take() { return std::exchange(out_, {}); }
  bool handshake_done() const { return handshake_.done(); }
  const ChunkReader& reader() const { return reader_; }

  // The next client command named `name` (earlier ones of other names are skipped).
  RtmpCommand expect_command(const std::string& name, uint32_t* stream_id = nullptr) {
    for (; next_ < received.size(); ++next_) {
      const Received& r = received[next_];
      if (r.command && r.command->name == name) {
        if (stream_id) *stream_id = r.msg.stream_id;
        return *received[next_++].command;
      }
    }
    ADD_FAILURE() << "the client did not send " << name;
    return {};
  }
  // Client messages of one type.
  std::vector<RtmpMessage> of_type(uint8_t type) const {
    std::vector<RtmpMessage> v;
    for (const auto& r : received) {
      if (r.msg.type_id == type) v.push_back(r.msg);
    }
    return v;
  }

  void send(uint8_t type, uint32_t csid, uint32_t sid, uint32_t ts, const Bytes& payload) {
    RtmpMessage m{type, sid, ts, csid, SharedBuffer::copy_of(std::span<const uint8_t>(payload))};
    BufferRef b = ChunkWriter::serialize(m, chunk_size_);
    out_.insert(out_.end(), b.data(), b.data() + b.size());
  }
  void send_control(uint8_t type, const BufferRef& payload) { send(type, 2, 0, 0, to_bytes(payload)); }
  void set_chunk_size(uint32_t size) {
    send_control(msg_type::SetChunkSize, set_chunk_size_payload(size));
    chunk_size_ = size;
  }
  void send_command(uint32_t sid, const std::string& name, double tx, const Amf0Value& obj,
                    std::vector<Amf0Value> args = {}) {
    send(msg_type::CommandAmf0, sid ? 5 : 3, sid, 0, encode_command(name, tx, obj, args));
  }
  void send_status(uint32_t sid, const std::string& level, const std::string& code,
                   const std::string& desc = "d") {
    send_command(sid, "onStatus", 0, Amf0Value::null(), {status_info(level, code, desc)});
  }
  // Rill's answer to connect (7.2.1.1): window, peer bandwidth, chunk size, _result.
  void accept_connect(double tx, uint32_t window = 2500000) {
    send_control(msg_type::WindowAckSize, window_ack_size_payload(window));
    send_control(msg_type::SetPeerBandwidth, set_peer_bandwidth_payload(window, bw_limit::Dynamic));
    set_chunk_size(4096);
    Amf0Value props = Amf0Value::object();
    props.set("fmsVer", Amf0Value::string("FMS/3,5,7,7009"));
    send_command(0, "_result", tx, props,
                 {status_info("status", "NetConnection.Connect.Success", "Connection succeeded.")});
  }

  std::vector<Received> received;
  uint64_t client_bytes = 0;

 private:
  void on_client_message(RtmpMessage&& m) {
    Received r{std::move(m), std::nullopt};
    if (r.msg.type_id == msg_type::CommandAmf0) r.command = parse_command(r.msg.payload.span());
    received.push_back(std::move(r));
  }

  HandshakeMac mac_;
  ServerHandshake handshake_{counter_random(7), mac_};
  ChunkReader reader_;
  uint32_t chunk_size_ = 128;
  Bytes out_;
  size_t next_ = 0;
};

struct Recorder : RtmpClientEvents {
  std::vector<State> states;
  std::vector<std::string> statuses;
  struct Media {
    RtmpMessage msg;
    uint32_t length;
  };
  std::vector<Media> media;
  std::vector<UserControlEvent> stream_events;

  void on_state(State s) override { states.push_back(s); }
  void on_status(std::string_view code, std::string_view) override { statuses.emplace_back(code); }
  void on_media(RtmpMessage&& m, uint32_t length) override { media.push_back({std::move(m), length}); }
  void on_stream_event(const UserControlEvent& ev) override { stream_events.push_back(ev); }
};

RtmpClientOptions options(RtmpClientRole role) {
  RtmpClientOptions o;
  o.role = role;
  o.app = "live";
  o.tc_url = "rtmp://127.0.0.1:1935/live";
  o.stream = "cam?token=1";
  o.connect_timeout_ms = 5000;
  o.random = counter_random(1);
  return o;
}

// A client and a server with the bytes moved between them.
struct Pair {
  explicit Pair(RtmpClientOptions o) : client(std::move(o), events) {}

  // Moves bytes both ways until neither side has anything to say.
  void exchange() {
    for (int round = 0; round < 16; ++round) {
      bool moved = false;
      for (const BufferRef& b : client.take_output()) {
        server.feed(b.span());
        moved = true;
      }
      Bytes s = server.take();
      if (!s.empty()) {
        client.feed(s);
        moved = true;
      }
      if (!moved) return;
    }
    ADD_FAILURE() << "the exchange did not settle";
  }
  // Handshake, connect accepted, createStream answered with stream id 1: the client is Starting.
  void up_to_starting() {
    client.start(1000);
    exchange();
    RtmpCommand c = server.expect_command("connect");
    server.accept_connect(c.transaction_id);
    exchange();
    RtmpCommand cs = server.expect_command("createStream");
    server.send_command(0, "_result", cs.transaction_id, Amf0Value::null(), {Amf0Value::number(1)});
    exchange();
  }

  Recorder events;
  RtmpClientSession client;
  ScriptedServer server;
};

const Amf0Value* find_in(const Amf0Value& obj, const char* key) { return obj.find(key); }

}  // namespace

TEST(RtmpClientSession, PlaySucceeds) {
  RtmpClientOptions o = options(RtmpClientRole::Play);
  o.connect_extra.push_back({"rill-hops", Amf0Value::number(2)});
  Pair p(std::move(o));
  EXPECT_EQ(p.client.state(), State::Idle);
  p.client.start(1000);
  EXPECT_EQ(p.client.next_deadline_ms(), 6000);
  p.exchange();
  ASSERT_TRUE(p.server.handshake_done());
  EXPECT_EQ(p.client.state(), State::Connecting);

  RtmpCommand connect = p.server.expect_command("connect");
  EXPECT_EQ(connect.transaction_id, 1);
  const Amf0Value& obj = connect.command_object;
  EXPECT_EQ(obj.find_string("app"), "live");
  EXPECT_EQ(obj.find_string("tcUrl"), "rtmp://127.0.0.1:1935/live");
  EXPECT_EQ(obj.find_string("type"), "nonprivate");
  EXPECT_TRUE(obj.find_string("flashVer").has_value());
  EXPECT_EQ(obj.find_number("rill-hops"), 2);
  ASSERT_NE(find_in(obj, "videoCodecs"), nullptr);

  p.server.accept_connect(connect.transaction_id);
  p.exchange();
  EXPECT_EQ(p.client.state(), State::CreatingStream);
  EXPECT_EQ(p.client.in_chunk_size(), 4096u);
  // 5.4.5: the peer bandwidth differs from what was sent: Window Acknowledgement Size answers it.
  auto was = p.server.of_type(msg_type::WindowAckSize);
  ASSERT_EQ(was.size(), 1u);
  EXPECT_EQ(parse_window_ack_size(was[0].payload.span()), 2500000u);
  // 5.4.1: our chunk size, after connect.
  EXPECT_EQ(p.server.reader().chunk_size(), 4096u);

  RtmpCommand cs = p.server.expect_command("createStream");
  p.server.send_command(0, "_result", cs.transaction_id, Amf0Value::null(), {Amf0Value::number(1)});
  p.exchange();
  EXPECT_EQ(p.client.state(), State::Starting);
  EXPECT_EQ(p.client.stream_id(), 1u);
  uint32_t sid = 0;
  RtmpCommand play = p.server.expect_command("play", &sid);
  EXPECT_EQ(sid, 1u);
  EXPECT_EQ(play.arg_string(0), "cam?token=1");
  EXPECT_EQ(play.arg_number(1, 0), -2);
  auto uc = p.server.of_type(msg_type::UserControl);
  ASSERT_EQ(uc.size(), 1u);
  EXPECT_EQ(parse_user_control(uc[0].payload.span()).event, uc_event::SetBufferLength);

  // 7.2.2.1: StreamBegin, Play.Reset, Play.Start, then data and media.
  p.server.send_control(msg_type::UserControl, user_control_payload(uc_event::StreamBegin, 1));
  p.server.send_status(1, "status", "NetStream.Play.Reset");
  p.server.send_status(1, "status", "NetStream.Play.Start");
  p.server.send(msg_type::DataAmf0, 5, 1, 0, pattern(30, 1));
  p.server.send(msg_type::Video, 6, 1, 40, pattern(9000, 2));
  p.server.send(msg_type::Audio, 4, 1, 46, pattern(200, 3));
  p.exchange();
  EXPECT_EQ(p.client.state(), State::Streaming);
  EXPECT_EQ(p.client.next_deadline_ms(), std::nullopt);
  EXPECT_EQ(p.events.states, (std::vector<State>{State::Handshaking, State::Connecting, State::CreatingStream,
                                                 State::Starting, State::Streaming}));
  EXPECT_EQ(p.events.statuses, (std::vector<std::string>{"NetStream.Play.Reset", "NetStream.Play.Start"}));
  ASSERT_EQ(p.events.stream_events.size(), 1u);
  EXPECT_EQ(p.events.stream_events[0].event, uc_event::StreamBegin);
  ASSERT_EQ(p.events.media.size(), 3u);
  EXPECT_EQ(p.events.media[0].msg.type_id, msg_type::DataAmf0);
  EXPECT_EQ(p.events.media[1].msg.type_id, msg_type::Video);
  EXPECT_EQ(p.events.media[1].msg.timestamp, 40u);
  EXPECT_EQ(p.events.media[1].length, 9000u);
  EXPECT_EQ(to_bytes(p.events.media[1].msg.payload), pattern(9000, 2));
  EXPECT_EQ(p.events.media[2].msg.type_id, msg_type::Audio);
}

TEST(RtmpClientSession, PublishSucceedsAndSendsMedia) {
  Pair p(options(RtmpClientRole::Publish));
  p.client.start(0);
  p.exchange();
  RtmpCommand connect = p.server.expect_command("connect");
  EXPECT_EQ(connect.command_object.find_string("flashVer"), "FMLE/3.0 (compatible; rill)");
  p.server.accept_connect(connect.transaction_id);
  p.exchange();
  RtmpCommand release = p.server.expect_command("releaseStream");
  RtmpCommand fcpublish = p.server.expect_command("FCPublish");
  RtmpCommand cs = p.server.expect_command("createStream");
  EXPECT_EQ(release.arg_string(0), "cam?token=1");
  EXPECT_EQ(fcpublish.arg_string(0), "cam?token=1");
  EXPECT_NE(release.transaction_id, fcpublish.transaction_id);
  EXPECT_NE(fcpublish.transaction_id, cs.transaction_id);
  // Answered as Rill answers them: onFCPublish, then _result for each.
  p.server.send_command(0, "onFCPublish", 0, Amf0Value::null(),
                        {status_info("status", "NetStream.Publish.Start", "cam")});
  p.server.send_command(0, "_result", release.transaction_id, Amf0Value::null(), {Amf0Value::undefined()});
  p.server.send_command(0, "_result", fcpublish.transaction_id, Amf0Value::null(), {Amf0Value::undefined()});
  EXPECT_FALSE(p.client.send_media(msg_type::Video, 0, SharedBuffer::copy_of(std::string_view("x"))));
  p.server.send_command(0, "_result", cs.transaction_id, Amf0Value::null(), {Amf0Value::number(3)});
  p.exchange();
  EXPECT_EQ(p.client.state(), State::Starting);
  uint32_t sid = 0;
  RtmpCommand publish = p.server.expect_command("publish", &sid);
  EXPECT_EQ(sid, 3u);
  EXPECT_EQ(publish.arg_string(0), "cam?token=1");
  EXPECT_EQ(publish.arg_string(1), "live");

  p.server.send_control(msg_type::UserControl, user_control_payload(uc_event::StreamBegin, 3));
  p.server.send_status(3, "status", "NetStream.Publish.Start");
  p.exchange();
  ASSERT_EQ(p.client.state(), State::Streaming);

  // An FLV script tag body goes out as @setDataFrame + body; media as given, at chunk size 4096.
  Bytes meta;
  Amf0Encoder(meta).write_string("onMetaData");
  Amf0Encoder(meta).write_ecma_array(Amf0Value::ecma_array());
  Bytes video = pattern(10000, 4);
  EXPECT_TRUE(
      p.client.send_media(msg_type::DataAmf0, 0, SharedBuffer::copy_of(std::span<const uint8_t>(meta))));
  EXPECT_TRUE(p.client.send_media(msg_type::Video, 0x1000000,
                                  SharedBuffer::copy_of(std::span<const uint8_t>(video))));
  EXPECT_TRUE(p.client.send_media(msg_type::Audio, 21, SharedBuffer::copy_of(std::string_view("ab"))));
  EXPECT_FALSE(p.client.send_media(msg_type::CommandAmf0, 0, SharedBuffer::copy_of(std::string_view("x"))));
  p.exchange();
  auto data = p.server.of_type(msg_type::DataAmf0);
  ASSERT_EQ(data.size(), 1u);
  Amf0Decoder dec(data[0].payload.span());
  EXPECT_EQ(dec.decode().as_string(), "@setDataFrame");
  EXPECT_EQ(dec.decode().as_string(), "onMetaData");
  EXPECT_EQ(data[0].stream_id, 3u);
  auto v = p.server.of_type(msg_type::Video);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].timestamp, 0x1000000u);
  EXPECT_EQ(v[0].stream_id, 3u);
  EXPECT_EQ(to_bytes(v[0].payload), video);
  ASSERT_EQ(p.server.of_type(msg_type::Audio).size(), 1u);
  EXPECT_EQ(p.events.statuses,
            (std::vector<std::string>{"NetStream.Publish.Start", "NetStream.Publish.Start"}));

  // A polite end: FCUnpublish and deleteStream, then Closed; later bytes are ignored.
  p.client.close();
  EXPECT_EQ(p.client.state(), State::Closed);
  p.exchange();
  p.server.expect_command("FCUnpublish");
  RtmpCommand del = p.server.expect_command("deleteStream");
  EXPECT_EQ(del.arg_number(0, 0), 3);
  p.server.send_status(3, "error", "NetStream.Whatever");
  p.exchange();
  EXPECT_EQ(p.client.state(), State::Closed);
  EXPECT_EQ(p.client.failure().kind, Kind::None);
}

TEST(RtmpClientSession, StreamNotFound) {
  Pair p(options(RtmpClientRole::Play));
  p.up_to_starting();
  p.server.send_status(1, "error", "NetStream.Play.StreamNotFound", "no stream cam");
  p.exchange();
  EXPECT_EQ(p.client.state(), State::Failed);
  const RtmpClientFailure& f = p.client.failure();
  EXPECT_EQ(f.kind, Kind::StatusError);
  EXPECT_EQ(f.phase, State::Starting);
  EXPECT_EQ(f.code, "NetStream.Play.StreamNotFound");
  EXPECT_EQ(f.detail, "no stream cam");
  EXPECT_EQ(f.to_string(), "starting: status error NetStream.Play.StreamNotFound: no stream cam");
  EXPECT_EQ(p.client.next_deadline_ms(), std::nullopt);
}

TEST(RtmpClientSession, PublishBadName) {
  Pair p(options(RtmpClientRole::Publish));
  p.up_to_starting();
  p.server.expect_command("publish");
  p.server.send_status(1, "error", "NetStream.Publish.BadName", "stream cam is already publishing");
  p.exchange();
  EXPECT_EQ(p.client.state(), State::Failed);
  EXPECT_EQ(p.client.failure().kind, Kind::StatusError);
  EXPECT_EQ(p.client.failure().phase, State::Starting);
  EXPECT_EQ(p.client.failure().code, "NetStream.Publish.BadName");
  EXPECT_FALSE(p.client.send_media(msg_type::Video, 0, SharedBuffer::copy_of(std::string_view("x"))));
}

TEST(RtmpClientSession, ConnectRejected) {
  Pair p(options(RtmpClientRole::Play));
  p.client.start(0);
  p.exchange();
  RtmpCommand c = p.server.expect_command("connect");
  p.server.send_command(0, "_error", c.transaction_id, Amf0Value::null(),
                        {status_info("error", "NetConnection.Connect.Rejected", "unknown application live")});
  p.exchange();
  EXPECT_EQ(p.client.state(), State::Failed);
  const RtmpClientFailure& f = p.client.failure();
  EXPECT_EQ(f.kind, Kind::Refused);
  EXPECT_EQ(f.phase, State::Connecting);
  EXPECT_EQ(f.code, "NetConnection.Connect.Rejected");
  EXPECT_NE(f.detail.find("_error in reply to connect"), std::string::npos) << f.detail;
  EXPECT_NE(f.detail.find("unknown application"), std::string::npos) << f.detail;
}

TEST(RtmpClientSession, ErrorsToHistoricalCommandsAreIgnored) {
  Pair p(options(RtmpClientRole::Publish));
  p.client.start(0);
  p.exchange();
  p.server.accept_connect(p.server.expect_command("connect").transaction_id);
  p.exchange();
  RtmpCommand release = p.server.expect_command("releaseStream");
  p.server.send_command(0, "_error", release.transaction_id, Amf0Value::null(),
                        {status_info("error", "NetConnection.Call.Failed", "unknown command")});
  p.server.send_command(0, "_error", 99, Amf0Value::null(), {});  // a transaction we never used
  p.exchange();
  EXPECT_EQ(p.client.state(), State::CreatingStream);
}

TEST(RtmpClientSession, PingAnsweredAndStreamEventsReported) {
  Pair p(options(RtmpClientRole::Play));
  p.up_to_starting();
  p.server.send_status(1, "status", "NetStream.Play.Start");
  p.server.send_control(msg_type::UserControl, user_control_payload(uc_event::PingRequest, 123456));
  p.server.send_status(1, "status", "NetStream.Play.UnpublishNotify");
  p.server.send_control(msg_type::UserControl, user_control_payload(uc_event::StreamEOF, 1));
  p.server.send_status(1, "status", "NetStream.Play.Stop");
  p.exchange();
  EXPECT_EQ(p.client.state(), State::Streaming);  // the owner decides what a stop means
  std::vector<UserControlEvent> pongs;
  for (const RtmpMessage& m : p.server.of_type(msg_type::UserControl)) {
    UserControlEvent ev = parse_user_control(m.payload.span());
    if (ev.event == uc_event::PingResponse) pongs.push_back(ev);
  }
  ASSERT_EQ(pongs.size(), 1u);
  EXPECT_EQ(pongs[0].value1, 123456u);  // 7.1.7: the timestamp of the request
  ASSERT_EQ(p.events.stream_events.size(), 1u);
  EXPECT_EQ(p.events.stream_events[0].event, uc_event::StreamEOF);
  EXPECT_EQ(p.events.statuses.back(), "NetStream.Play.Stop");
}

TEST(RtmpClientSession, AcknowledgementEveryWindow) {
  Pair p(options(RtmpClientRole::Play));
  p.client.start(0);
  p.exchange();
  p.server.accept_connect(p.server.expect_command("connect").transaction_id, 10000);
  p.exchange();
  RtmpCommand cs = p.server.expect_command("createStream");
  p.server.send_command(0, "_result", cs.transaction_id, Amf0Value::null(), {Amf0Value::number(1)});
  p.server.send_status(1, "status", "NetStream.Play.Start");
  p.exchange();
  ASSERT_EQ(p.client.state(), State::Streaming);
  // The handshake (3073 bytes) and the replies so far are under the window: no Ack yet.
  EXPECT_TRUE(p.server.of_type(msg_type::Ack).empty());
  EXPECT_LT(p.client.bytes_received(), 10000u);
  for (int i = 0; i < 10; ++i) {
    p.server.send(msg_type::Video, 6, 1, 40 * i, pattern(3000, uint8_t(i)));
    p.exchange();
  }
  auto acks = p.server.of_type(msg_type::Ack);
  ASSERT_GE(acks.size(), 2u);
  uint32_t prev = 0;
  for (const RtmpMessage& a : acks) {
    uint32_t seq = parse_ack(a.payload.span());
    EXPECT_GE(seq, prev + 10000);  // 5.4.4: one Acknowledgement per window received
    prev = seq;
  }
  EXPECT_LT(p.client.bytes_received() - prev, 10000u);  // nothing more is due
}

TEST(RtmpClientSession, FollowsTheServersChunkSize) {
  Pair p(options(RtmpClientRole::Play));
  p.up_to_starting();
  p.server.send_status(1, "status", "NetStream.Play.Start");
  p.server.set_chunk_size(100);
  p.server.send(msg_type::Video, 6, 1, 0, pattern(1000, 5));
  p.server.set_chunk_size(60000);
  p.server.send(msg_type::Video, 6, 1, 40, pattern(70000, 6));
  p.exchange();
  EXPECT_EQ(p.client.in_chunk_size(), 60000u);
  ASSERT_EQ(p.events.media.size(), 2u);
  EXPECT_EQ(to_bytes(p.events.media[0].msg.payload), pattern(1000, 5));
  EXPECT_EQ(to_bytes(p.events.media[1].msg.payload), pattern(70000, 6));
}

TEST(RtmpClientSession, ConnectTimeoutInEachPhase) {
  {
    Pair p(options(RtmpClientRole::Play));
    p.client.start(1000);
    p.client.take_output();  // C0C1 goes nowhere
    p.client.poll(5999);
    EXPECT_EQ(p.client.state(), State::Handshaking);
    p.client.poll(6000);
    ASSERT_EQ(p.client.state(), State::Failed);
    EXPECT_EQ(p.client.failure().kind, Kind::Timeout);
    EXPECT_EQ(p.client.failure().phase, State::Handshaking);
    EXPECT_NE(p.client.failure().detail.find("S0S1S2"), std::string::npos) << p.client.failure().detail;
    EXPECT_NE(p.client.failure().detail.find("5000 ms"), std::string::npos) << p.client.failure().detail;
  }
  {
    Pair p(options(RtmpClientRole::Play));
    p.up_to_starting();  // started at 1000
    p.client.poll(3000);
    EXPECT_EQ(p.client.state(), State::Starting);
    EXPECT_EQ(p.client.next_deadline_ms(), 6000);
    p.client.poll(7000);
    ASSERT_EQ(p.client.state(), State::Failed);
    EXPECT_EQ(p.client.failure().phase, State::Starting);
    EXPECT_NE(p.client.failure().detail.find("NetStream.Play.Start"), std::string::npos);
  }
  {
    Pair p(options(RtmpClientRole::Play));
    p.up_to_starting();
    p.server.send_status(1, "status", "NetStream.Play.Start");
    p.exchange();
    p.client.poll(1'000'000);  // streaming: no timeout any more
    EXPECT_EQ(p.client.state(), State::Streaming);
  }
}

TEST(RtmpClientSession, MalformedServerBytesFailWithContext) {
  {
    Pair p(options(RtmpClientRole::Play));
    p.client.start(0);
    Bytes s0 = {6};  // RTMPE version byte
    p.client.feed(s0);
    ASSERT_EQ(p.client.state(), State::Failed);
    EXPECT_EQ(p.client.failure().kind, Kind::Protocol);
    EXPECT_EQ(p.client.failure().phase, State::Handshaking);
  }
  {
    Pair p(options(RtmpClientRole::Play));
    p.client.start(0);
    p.exchange();
    Bytes garbage = {0x89, 0, 0, 0};  // fmt 2 first on chunk stream 9
    p.client.feed(garbage);
    ASSERT_EQ(p.client.state(), State::Failed);
    EXPECT_EQ(p.client.failure().kind, Kind::Protocol);
    EXPECT_EQ(p.client.failure().phase, State::Connecting);
    EXPECT_NE(p.client.failure().detail.find("chunk stream 9"), std::string::npos)
        << p.client.failure().detail;
    EXPECT_NE(p.client.failure().to_string().find("connecting: protocol error"), std::string::npos);
  }
  {
    Pair p(options(RtmpClientRole::Play));
    p.up_to_starting();
    p.server.send(msg_type::CommandAmf0, 3, 0, 0, Bytes(9, 0));  // a number where the name goes
    p.exchange();
    ASSERT_EQ(p.client.state(), State::Failed);
    EXPECT_NE(p.client.failure().detail.find("expected the command name"), std::string::npos)
        << p.client.failure().detail;
  }
  {
    Pair p(options(RtmpClientRole::Play));
    p.client.start(0);
    p.exchange();
    RtmpCommand c = p.server.expect_command("connect");
    p.server.accept_connect(c.transaction_id);
    p.exchange();
    RtmpCommand cs = p.server.expect_command("createStream");
    p.server.send_command(0, "_result", cs.transaction_id, Amf0Value::null(), {Amf0Value::string("one")});
    p.exchange();
    ASSERT_EQ(p.client.state(), State::Failed);
    EXPECT_EQ(p.client.failure().phase, State::CreatingStream);
    EXPECT_NE(p.client.failure().detail.find("expected the stream id"), std::string::npos)
        << p.client.failure().detail;
  }
  {
    Pair p(options(RtmpClientRole::Play));
    p.up_to_starting();
    p.server.send_control(msg_type::UserControl, user_control_payload(uc_event::PingRequest, 1));
    Bytes deep;  // onStatus with objects nested deeper than the AMF0 limit
    Amf0Encoder enc(deep);
    enc.write_string("onStatus");
    enc.write_number(0);
    enc.write_null();
    for (int i = 0; i < 40; ++i) {
      enc.begin_object();
      enc.write_key("k");
    }
    p.server.send(msg_type::CommandAmf0, 5, 1, 0, deep);
    p.exchange();
    ASSERT_EQ(p.client.state(), State::Failed);
    EXPECT_EQ(p.client.failure().kind, Kind::Protocol);
    EXPECT_NE(p.client.failure().detail.find("command message of"), std::string::npos)
        << p.client.failure().detail;
    EXPECT_NE(p.client.failure().detail.find("deeper than 16 levels"), std::string::npos)
        << p.client.failure().detail;
  }
}

TEST(RtmpClientSession, AggregateDeliveredAsIs) {
  Pair p(options(RtmpClientRole::Play));
  p.up_to_starting();
  p.server.send_status(1, "status", "NetStream.Play.Start");
  Bytes agg;
  for (uint8_t type : {msg_type::Video, msg_type::Audio}) {
    Bytes body = pattern(50, type);
    Bytes h = {type, 0, 0, 50, 0, 0, 0x10, 0, 0, 0, 0};
    agg.insert(agg.end(), h.begin(), h.end());
    agg.insert(agg.end(), body.begin(), body.end());
    Bytes back = {0, 0, 0, 61};
    agg.insert(agg.end(), back.begin(), back.end());
  }
  p.server.send(msg_type::Aggregate, 6, 1, 500, agg);
  p.exchange();
  ASSERT_EQ(p.events.media.size(), 1u);
  EXPECT_EQ(p.events.media[0].msg.type_id, msg_type::Aggregate);
  EXPECT_EQ(p.events.media[0].length, agg.size());
  EXPECT_EQ(to_bytes(p.events.media[0].msg.payload), agg);
  auto subs = split_aggregate(p.events.media[0].msg);
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[1].timestamp, 500u);
}

TEST(RtmpClientSession, MediaPrefixKeepsHeadersOnly) {
  RtmpClientOptions o = options(RtmpClientRole::Play);
  o.media_prefix = 16;
  Pair p(std::move(o));
  p.up_to_starting();
  // Media before NetStream.Play.Start: playing anyway.
  p.server.send(msg_type::Video, 6, 1, 40, pattern(50000, 7));
  Bytes cmd = encode_command(
      "onStatus", 0, Amf0Value::null(),
      std::vector<Amf0Value>{status_info("status", "NetStream.Play.Start", std::string(300, 'x'))});
  p.server.send(msg_type::CommandAmf0, 5, 1, 0, cmd);
  p.exchange();
  EXPECT_EQ(p.client.state(), State::Streaming);
  ASSERT_EQ(p.events.media.size(), 1u);
  EXPECT_EQ(p.events.media[0].length, 50000u);
  const Bytes sent = pattern(50000, 7);
  EXPECT_EQ(to_bytes(p.events.media[0].msg.payload), Bytes(sent.begin(), sent.begin() + 16));
  EXPECT_EQ(p.events.statuses.back(), "NetStream.Play.Start");  // commands are still whole
}

TEST(RtmpClientSession, TransportClosed) {
  Pair p(options(RtmpClientRole::Play));
  p.up_to_starting();
  p.client.transport_closed();
  ASSERT_EQ(p.client.state(), State::Failed);
  EXPECT_EQ(p.client.failure().kind, Kind::PeerClosed);
  EXPECT_EQ(p.client.failure().phase, State::Starting);
  EXPECT_NE(p.client.failure().detail.find("NetStream.Play.Start"), std::string::npos);
  p.client.transport_closed();  // once only
  EXPECT_EQ(std::count(p.events.states.begin(), p.events.states.end(), State::Failed), 1);
}
