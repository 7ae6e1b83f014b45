// RtmpSession: NetConnection and NetStream commands (RTMP spec 1.0 §7.2.1, §7.2.2) and the
// subscriber side (frames and publisher events from the hub).
#include <algorithm>

#include "rill/core/access_line.h"
#include "rill/protocol/chunk_writer.h"
#include "rill/protocol/query_string.h"
#include "rill/server/rtmp_session.h"
#include "rill/server/stream_gate.h"

namespace rill::server {

using protocol::Amf0Value;

void RtmpSession::handle_command(const protocol::RtmpMessage& msg) {
  protocol::Amf0Limits lim;
  lim.max_depth = 16;
  lim.max_string = 64 * 1024;
  protocol::RtmpCommand c = protocol::parse_command(msg.payload.span(), lim);
  const std::string& n = c.name;
  if (n == "connect") return cmd_connect(c);
  if (app_cfg_ == nullptr) {
    throw protocol::ProtocolError("command '" + n + "' before connect");
  }
  if (n == "createStream") return cmd_create_stream(c);
  if (n == "publish") return cmd_publish(c, msg.stream_id);
  if (n == "play") return cmd_play(c, msg.stream_id);
  if (n == "pause") return cmd_pause(c);
  if (n == "deleteStream" || n == "closeStream") return cmd_close_stream(n.c_str());
  if (n == "FCUnpublish") {
    if (publishing_) cmd_close_stream("FCUnpublish");
    return;
  }
  if (n == "receiveAudio") {
    receive_audio_ = c.arg_bool(0, true);
    return;
  }
  if (n == "receiveVideo") {
    receive_video_ = c.arg_bool(0, true);
    if (receive_video_) wait_keyframe_ = true;
    return;
  }
  if (n == "releaseStream" || n == "FCPublish" || n == "getStreamLength" || n == "checkBandwidth" ||
      n == "_checkbw" || n == "FCSubscribe") {
    // Answered harmlessly so that OBS, ffmpeg and Flash-era clients carry on.
    if (n == "FCPublish") {
      Amf0Value args[] = {protocol::status_info("status", "NetStream.Publish.Start", c.arg_string(0))};
      send_command(3, 0, "onFCPublish", 0, Amf0Value::null(), args);
    }
    if (c.transaction_id != 0) {
      Amf0Value args[] = {n == "getStreamLength" ? Amf0Value::number(0) : Amf0Value::undefined()};
      send_command(3, 0, "_result", c.transaction_id, Amf0Value::null(), args);
    }
    return;
  }
  if (n == "_result" || n == "_error" || n == "onBWDone" || n == "onStatus") return;  // replies to us
  ctx_.log->debug("rtmp: {} unknown command '{}' ignored", peer_, n);
  if (c.transaction_id != 0) {
    Amf0Value args[] = {protocol::status_info("error", "NetConnection.Call.Failed", "unknown command " + n)};
    send_command(3, 0, "_error", c.transaction_id, Amf0Value::null(), args);
  }
}

void RtmpSession::cmd_connect(const protocol::RtmpCommand& c) {
  if (app_cfg_ != nullptr) throw protocol::ProtocolError("second connect on one connection");
  auto app = c.command_object.find_string("app");
  const media::NameAndQuery app_q = media::split_query(app ? *app : std::string_view());
  app_ = app_q.name;
  connect_query_ = app_q.query;
  if (auto tc = c.command_object.find_string("tcUrl")) tc_url_ = std::string(*tc);
  if (auto pu = c.command_object.find_string("pageUrl")) page_url_ = std::string(*pu);
  if (auto fv = c.command_object.find_string("flashVer")) flash_ver_ = std::string(*fv);
  // E-RTMP v1/v2 "Extending NetConnection connect Command": a client lists the FourCCs it handles.
  for (const char* key : {"fourCcList", "videoFourCcInfoMap", "audioFourCcInfoMap", "capsEx"})
    enhanced_client_ = enhanced_client_ || c.command_object.find(key) != nullptr;
  // E-RTMP v2 "capsEx: Extended capabilities mask", CapsExMultitrack = 0x02 ("Support for
  // multitrack"): the client reads VideoPacketType/AudioPacketType.Multitrack tags.
  multitrack_client_ =
      (static_cast<uint32_t>(c.command_object.find_number("capsEx").value_or(0)) & 0x02) != 0;
  relay_hops_ =
      static_cast<uint32_t>(std::clamp(c.command_object.find_number("rill-hops").value_or(0), 0.0, 255.0));
  app_cfg_ = ctx_.config->find_app(app_);
  if (app_cfg_ == nullptr) {
    ctx_.log->warn("rtmp: {} connect to unknown app '{}' rejected", peer_, app_);
    Amf0Value args[] = {
        protocol::status_info("error", "NetConnection.Connect.Rejected", "unknown application " + app_)};
    send_command(3, 0, "_error", c.transaction_id, Amf0Value::null(), args);
    refuse("unknown app", "unknown app");
    return;
  }
  conn_->set_queue_limits(net::queue_limits_for(app_cfg_));  // keeps what is queued
  // §7.2.1.1: Window Acknowledgement Size, Set Peer Bandwidth, then the _result.
  send_message(protocol::msg_type::WindowAckSize, 2, 0, 0,
               protocol::window_ack_size_payload(ctx_.config->rtmp.ack_window));
  send_message(protocol::msg_type::SetPeerBandwidth, 2, 0, 0,
               protocol::set_peer_bandwidth_payload(ctx_.config->rtmp.ack_window, 2));
  send_message(protocol::msg_type::SetChunkSize, 2, 0, 0,
               protocol::set_chunk_size_payload(ctx_.config->rtmp.chunk_size));
  out_chunk_size_ = ctx_.config->rtmp.chunk_size;
  Amf0Value props = Amf0Value::object();
  props.set("fmsVer", Amf0Value::string("FMS/3,5,7,7009"));
  props.set("capabilities", Amf0Value::number(31));
  props.set("mode", Amf0Value::number(1));
  Amf0Value info = protocol::status_info("status", "NetConnection.Connect.Success", "Connection succeeded.");
  info.set("objectEncoding", Amf0Value::number(c.command_object.find_number("objectEncoding").value_or(0)));
  Amf0Value args[] = {info};
  send_command(3, 0, "_result", c.transaction_id, props, args);
  ctx_.log->debug("rtmp: {} connected to app '{}'", peer_, app_);
}

void RtmpSession::cmd_create_stream(const protocol::RtmpCommand& c) {
  Amf0Value args[] = {Amf0Value::number(next_stream_id_)};
  if (next_stream_id_ < 64) ++next_stream_id_;
  send_command(3, 0, "_result", c.transaction_id, Amf0Value::null(), args);
}

AdmissionRequest RtmpSession::admission_request(const media::StreamKey& key, std::string query) const {
  AdmissionRequest r;
  r.proto = GateProto::Rtmp;
  r.key = key;
  if (app_cfg_ && app_cfg_->name == key.app) r.app = app_cfg_;  // resolved at connect
  // "publish cam?token=x" or, as some encoders send it, "connect live?token=x".
  r.query = query.empty() ? connect_query_ : std::move(query);
  r.peer = peer_;
  r.session_id = id();
  r.tc_url = tc_url_;
  r.page_url = page_url_;
  r.flash_ver = flash_ver_;
  return r;
}

// The stream argument of publish/play: "name" or "name?query". The name follows the one name rule;
// a bad one is answered with `refusal` (BadName / StreamNotFound) and the connection closes.
std::optional<media::StreamKey> RtmpSession::stream_key_of(const protocol::RtmpCommand& c, uint32_t msid,
                                                           const char* refusal, std::string& query) {
  media::NameAndQuery nq = media::split_query(c.arg_string(0));
  stream_name_ = std::move(nq.name);
  query = std::move(nq.query);
  access_command_ = c.name == "publish" ? "publish" : "play";
  access_args_ = core::redact_query(query.empty() ? connect_query_ : query, ctx_.config->log.redact_params);
  std::string why;
  auto key = media::StreamKey::make(app_, stream_name_, &why);
  if (!key) {
    ctx_.log->warn("rtmp: {} {} '{:.200}' refused: {}", peer_, c.name, stream_name_, why);
    send_status(msid, "error", refusal, why);
    refuse("invalid stream name", why);
  }
  return key;
}

void RtmpSession::cmd_publish(const protocol::RtmpCommand& c, uint32_t msid) {
  if (publishing_ || playing_ || awaiting_gate_) {
    throw protocol::ProtocolError("publish on a connection that already publishes or plays");
  }
  std::string query;
  const auto key = stream_key_of(c, msid, "NetStream.Publish.BadName", query);
  if (!key) return;
  // The answer may come later (an HTTP callback): media that arrives meanwhile is dropped, as
  // encoders wait for NetStream.Publish.Start before they send any.
  awaiting_gate_ = true;  // the decision may come before admit_publish returns
  const auto t =
      gate_.admit_publish(admission_request(*key, std::move(query)), this,
                          [this, msid](GateDecision d) { on_publish_decision(msid, std::move(d)); });
  if (awaiting_gate_) gate_ticket_ = t;
}

void RtmpSession::on_publish_decision(uint32_t msid, GateDecision d) {
  awaiting_gate_ = false;
  gate_ticket_ = 0;
  if (d.verdict != Verdict::Admitted) {
    stream_log().warn("rtmp: {} publish {}/{} refused: {}", peer_, app_, stream_name_, d.reason);
    send_status(msid, "error",
                d.unauthorized ? "NetStream.Publish.Unauthorized" : "NetStream.Publish.BadName",
                d.verdict == Verdict::Busy ? "stream " + stream_name_ + " is already publishing"
                                           : "cannot publish " + stream_name_ + ": " + d.reason);
    refuse(d.verdict == Verdict::Busy ? "stream already publishing" : "publish refused",
           d.verdict == Verdict::Busy ? std::string_view("stream already publishing")
                                      : std::string_view(d.reason));
    return;
  }
  if (!d.key.name.empty()) stream_name_ = d.key.name;  // a callback may rename the stream
  stream_ = d.stream;
  stream_->set_relay_hops(relay_hops_);
  publishing_ = true;
  last_kind_ = net::SessionKind::Publisher;
  last_stream_ = stream_->key_text();
  send_user_control(protocol::uc_event::StreamBegin, msid);
  send_status(msid, "status", "NetStream.Publish.Start", stream_name_ + " is now published.");
  stream_log().info("rtmp: {} publishing {}/{}", peer_, app_, stream_name_);
}

void RtmpSession::cmd_play(const protocol::RtmpCommand& c, uint32_t msid) {
  if (publishing_ || playing_ || awaiting_gate_) {
    throw protocol::ProtocolError("play on a connection that already publishes or plays");
  }
  play_msid_ = msid;
  std::string query;
  const auto key = stream_key_of(c, msid, "NetStream.Play.StreamNotFound", query);
  if (!key || !choose_tracks(msid, query)) return;
  awaiting_gate_ = true;
  const auto t = gate_.admit_play(admission_request(*key, std::move(query)),
                                  [this, msid](GateDecision d) { on_play_decision(msid, std::move(d)); });
  if (awaiting_gate_) gate_ticket_ = t;
}

bool RtmpSession::choose_tracks(uint32_t msid, const std::string& query) {
  play_tracks_ = multitrack_client_ ? media::TrackSelection::all() : media::TrackSelection::one(0);
  const protocol::QueryParams params = protocol::parse_query(query);
  const std::string* value = protocol::query_value(params, "track");
  if (!value) return true;
  if (auto sel = media::parse_track_selection(*value)) {
    play_tracks_ = *sel;
    return true;
  }
  const std::string why = "track must be a track id (0-255) or \"all\", got \"" + value->substr(0, 40) + "\"";
  ctx_.log->info("rtmp: {} play {}/{}: {}", peer_, app_, stream_name_, why);
  send_status(msid, "error", "NetStream.Play.StreamNotFound", why);
  refuse("no such track", why);
  return false;
}

void RtmpSession::on_play_decision(uint32_t msid, GateDecision d) {
  awaiting_gate_ = false;
  gate_ticket_ = 0;
  if (d.verdict != Verdict::Admitted) {
    stream_log().info("rtmp: {} play {}/{}: {}", peer_, app_, stream_name_, d.reason);
    if (d.verdict == Verdict::NotFound) {
      send_status(msid, "error", "NetStream.Play.StreamNotFound", "no stream " + stream_name_);
    } else {
      send_status(msid, "error", "NetStream.Play.Failed", "cannot play " + stream_name_ + ": " + d.reason);
    }
    refuse(
        d.verdict == Verdict::NotFound ? "stream not found" : "play refused",
        d.verdict == Verdict::NotFound ? std::string_view("stream not found") : std::string_view(d.reason));
    return;
  }
  if (!d.key.name.empty()) stream_name_ = d.key.name;  // a callback may redirect the player
  media::Stream& s = *d.stream;
  if (!play_tracks_.is_all() && s.has_headers() && !s.has_track(play_tracks_.track())) {
    const std::string why = "no track " + std::to_string(play_tracks_.track()) + " in " + stream_name_;
    ctx_.log->info("rtmp: {} play {}/{}: {}", peer_, app_, stream_name_, why);
    send_status(msid, "error", "NetStream.Play.StreamNotFound", why);
    refuse("no such track", why);
    return;
  }
  // Track N's audio if it has its own, else track 0's (docs/abr.md, "Choosing a track").
  if (!play_tracks_.is_all()) play_tracks_ = s.audio_track_for(play_tracks_.track());
  // §7.2.2.1: StreamBegin, then NetStream.Play.Reset and NetStream.Play.Start.
  send_user_control(protocol::uc_event::StreamBegin, msid);
  send_status(msid, "status", "NetStream.Play.Reset", "Playing and resetting " + stream_name_ + ".");
  send_status(msid, "status", "NetStream.Play.Start", "Started playing " + stream_name_ + ".");
  {
    std::vector<uint8_t> body;
    protocol::Amf0Encoder enc(body);
    enc.write_string("|RtmpSampleAccess");
    enc.write_bool(true);
    enc.write_bool(true);
    send_message(protocol::msg_type::DataAmf0, 5, msid, 0, body);
  }
  stream_ = &s;
  playing_ = true;
  last_kind_ = net::SessionKind::Player;
  last_stream_ = s.key_text();
  stream_log().info("rtmp: {} playing {}/{}", peer_, app_, stream_name_);
  set_track_selection(play_tracks_);
  s.add_subscriber(this);  // replays metadata, sequence headers and the GOP cache
  conn_->flush_now();      // that first burst is never held by write merging
}

void RtmpSession::cmd_pause(const protocol::RtmpCommand& c) {
  if (!playing_) return;
  bool pause = c.arg_bool(0, true);
  if (pause == paused_) return;
  paused_ = pause;
  if (pause) {
    send_status(play_msid_, "status", "NetStream.Pause.Notify", "Paused " + stream_name_ + ".");
  } else {
    wait_keyframe_ = true;  // resume at the next keyframe: what was skipped cannot be decoded
    send_status(play_msid_, "status", "NetStream.Unpause.Notify", "Unpaused " + stream_name_ + ".");
  }
}

void RtmpSession::cmd_close_stream(const char* why) {
  if (publishing_) {
    send_status(1, "status", "NetStream.Unpublish.Success", stream_name_ + " is now unpublished.");
    stream_log().info("rtmp: {} unpublished {}/{} ({})", peer_, app_, stream_name_, why);
    stop_publishing();
  } else if (playing_) {
    stop_playing();
  }
}

void RtmpSession::stop_publishing() {
  if (!publishing_) return;
  publishing_ = false;
  media::Stream* s = std::exchange(stream_, nullptr);
  if (s) s->detach_publisher(this);
  gate_.publish_ended(media::StreamKey{app_, stream_name_});  // frees the name for every worker
}

void RtmpSession::stop_playing() {
  if (!playing_) return;
  playing_ = false;
  stream_log().info("rtmp: {} stopped playing {}/{} frames_out={} dropped={}", peer_, app_, stream_name_,
                    frames_out_, queue_.frames_dropped());
  media::Stream* s = std::exchange(stream_, nullptr);
  if (s) s->remove_subscriber(this);
}

// ---------------------------------------------------------------- media::Subscriber

void RtmpSession::on_frame(const media::FramePtr& f) {
  if (refused_codec_) return;
  if (!enhanced_client_ && (f->codec == media::FrameCodec::AV1 || f->codec == media::FrameCodec::VP9 ||
                            f->codec == media::FrameCodec::Opus)) {
    // AV1, VP9 and Opus exist in FLV only as E-RTMP tags (no legacy codec id): a player that did
    // not declare E-RTMP support in connect would get tags it cannot read. E-RTMP v2: a server
    // "should not" send a client FourCCs it did not list.
    refused_codec_ = true;
    const std::string why =
        media::codec_description(*f) + " needs an Enhanced RTMP player (fourCcList in connect)";
    stream_log().info("rtmp: {} play {}/{}: {}", peer_, app_, stream_name_, why);
    send_status(play_msid_, "error", "NetStream.Play.Failed", "cannot play " + stream_name_ + ": " + why);
    refuse("codec needs Enhanced RTMP", why);
    return;
  }
  if (state_ == State::Closed || paused_) {
    if (paused_ && f->type == media::MediaType::Video) wait_keyframe_ = true;
    return;
  }
  if (f->type == media::MediaType::Audio && !receive_audio_) return;
  if (f->type == media::MediaType::Video) {
    if (!receive_video_) return;
    if (wait_keyframe_ && !f->sequence_header) {
      if (!f->keyframe) return;
      wait_keyframe_ = false;
    }
  }
  BufferRef bytes;
  if (play_msid_ == media::kRtmpPlayStreamId) {
    bytes = f->rtmp_chunks(out_chunk_size_);  // shared by every player of this stream
  } else {
    protocol::RtmpMessage m;
    m.type_id = static_cast<uint8_t>(f->type);
    m.csid = f->type == media::MediaType::Audio   ? media::kRtmpCsidAudio
             : f->type == media::MediaType::Video ? media::kRtmpCsidVideo
                                                  : media::kRtmpCsidData;
    m.stream_id = play_msid_;
    m.timestamp = f->timestamp;
    m.payload = f->payload;
    bytes = protocol::ChunkWriter::serialize(m, out_chunk_size_);
  }
  auto r = queue_.push_frame(*f, std::move(bytes));
  if (r == media::OutputQueue::PushResult::Overflow) {
    stream_log().warn("rtmp: {} player of {} too slow ({} bytes, {} ms queued), disconnecting", peer_,
                      stream_ ? stream_->key_text() : std::string("-"), queue_.bytes(), queue_.duration_ms());
    close("slow consumer");
    return;
  }
  if (r == media::OutputQueue::PushResult::Queued) ++frames_out_;
  conn_->request_flush(f->type == media::MediaType::Video);
}

void RtmpSession::on_publish(media::Stream&) {
  send_user_control(protocol::uc_event::StreamBegin, play_msid_);
  send_status(play_msid_, "status", "NetStream.Play.PublishNotify", stream_name_ + " is now published.");
}

void RtmpSession::on_unpublish(media::Stream&) {
  send_status(play_msid_, "status", "NetStream.Play.UnpublishNotify", stream_name_ + " is now unpublished.");
}

void RtmpSession::on_stream_end(media::Stream&) {
  // The hub has detached us already.
  playing_ = false;
  stream_ = nullptr;
  send_user_control(protocol::uc_event::StreamEOF, play_msid_);
  send_status(play_msid_, "status", "NetStream.Play.Stop", "Stopped playing " + stream_name_ + ".");
  close_after_flush("stream ended");
}

}  // namespace rill::server
