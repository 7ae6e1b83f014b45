#include "rill/server/http_flv_session.h"

#include <optional>
#include <utility>

#include "rill/net/send_buffer.h"
#include "rill/protocol/flv_file.h"
#include "rill/protocol/query_string.h"

namespace rill::server {

HttpFlvSession::HttpFlvSession(net::WorkerCore& ctx, HttpExchange& ex, const StreamPath& route)
    : net::Session(net::SessionProtocol::HttpFlv),
      ctx_(ctx),
      ex_(&ex),
      request_(ctx, ex),
      info_(request_.info),
      key_(route.key) {
  set_id(info_.id);
}

net::SessionInfo HttpFlvSession::describe() const {
  net::SessionInfo i;
  i.id = id();
  i.kind = net::SessionKind::Player;
  i.protocol = "http-flv";
  i.peer = info_.peer;
  i.stream = key_.str();
  i.since_ms = info_.started_ms;
  i.bytes_out = bytes_out();
  i.queued_bytes = body_ ? body_->queued_bytes() : 0;
  i.frames_out = frames_out_;
  i.dropped_frames = frames_dropped();
  return i;
}

HttpFlvSession::~HttpFlvSession() {
  if (!retired_) close("destroyed");
}

// `s` is the stream the gate admitted this player to (null for a HEAD probe).
void HttpFlvSession::start(media::Stream* s) {
  HttpExchange& ex = *std::exchange(ex_, nullptr);
  if (!s && info_.method != HttpMethod::Head) {
    ex.reply_error(500, "no stream for " + key_.str());
    return finish("no stream");
  }
  // Track 0 re-framed by default (players of plain FLV: mpegts.js, ffmpeg); "?track=all": the
  // tags as sent, multitrack ones included; "?track=N": track N (media/track_selection.h).
  std::optional<media::TrackSelection> tracks = media::TrackSelection::one(0);
  const protocol::QueryParams params = protocol::parse_query(info_.query);
  if (const std::string* v = protocol::query_value(params, "track")) {
    tracks = media::parse_track_selection(*v);
  }
  if (!tracks || (s && !tracks->is_all() && s->has_headers() && !s->has_track(tracks->track()))) {
    ex.reply_error(404, tracks ? "no track " + std::to_string(tracks->track()) + " in " + key_.str()
                               : "track must be a track id (0-255) or \"all\"");
    return finish("no such track");
  }
  // Track N's audio if it has its own, else track 0's (docs/abr.md, "Choosing a track").
  if (s && !tracks->is_all()) tracks = s->audio_track_for(tracks->track());
  set_track_selection(*tracks);
  ex.add_header("Content-Type", "video/x-flv");
  ex.add_header("Cache-Control", "no-cache, no-store");
  ex.add_cors_headers();
  // The head goes out chunked (HTTP/1.1: a client can tell the end of the stream from a cut) or
  // close-delimited (HTTP/1.0, RFC 9112 §6.3), and the connection is ours from here on.
  HttpStreamHandover taken = ex.take_stream(200);
  if (!taken) {  // HEAD: answered with the head alone; a GET here lost its connection
    if (taken.release_slot) taken.release_slot();
    if (info_.method == HttpMethod::Head) {
      logged_ = true;  // by the exchange, with the head
      return finish(nullptr);
    }
    return finish("connection lost");
  }
  body_ = std::make_unique<HttpBodyStream>(ctx_, std::move(taken),
                                           [this](const std::string& why) { on_body_closed(why); });
  // The slow-consumer policy of an RTMP player of the app: whole tags dropped, never a part.
  body_->connection().set_queue_limits(net::queue_limits_for(&s->app_config()));
  // The queue bounds hold in seconds only if the kernel does not buffer megabytes first.
  net::limit_kernel_send_queue(body_->fd(), ctx_.config->http.send_buffer, ctx_.config->http.notsent_lowat);
  body_->start();
  started_ = true;
  const media::StreamInfo& info = s->info();
  bool known = info.has_audio || info.has_video;
  auto header = protocol::flv_file_header(known ? info.has_audio : true, known ? info.has_video : true);
  body_->push_control(header);
  stream_ = s;
  stream_log().info("http-flv: {} playing {}", info_.peer, key_.str());
  s->add_subscriber(this);  // replays metadata, sequence headers and the GOP cache
  body_->flush_now();       // that first burst is never held by write merging
}

void HttpFlvSession::on_frame(const media::FramePtr& f) {
  if (closed_ || !body_) return;
  media::OutputQueue& queue = body_->connection().queue();
  auto r = queue.push_frame(*f, body_->chunked() ? f->flv_chunk() : f->flv_tag());
  if (r == media::OutputQueue::PushResult::Queued) ++frames_out_;
  if (r == media::OutputQueue::PushResult::Overflow) {
    stream_log().warn("http-flv: {} player of {} too slow ({} bytes, {} ms queued), disconnecting",
                      info_.peer, key_.str(), queue.bytes(), queue.duration_ms());
    close("slow consumer");
    return;
  }
  body_->request_flush(f->type == media::MediaType::Video);
}

void HttpFlvSession::on_stream_end(media::Stream&) {
  stream_ = nullptr;  // the hub detached us
  finish("stream ended");
}

void HttpFlvSession::close(const char* reason) {
  if (retired_) return;
  if (body_) {
    if (started_) log_access_once(reason);
    body_->close(reason);  // an ending body too: the worker stops
  }
  if (closed_) return retire_once();
  finish(reason);
}

void HttpFlvSession::finish(const char* reason) {
  if (closed_) return;
  closed_ = true;
  if (body_ && body_->open() && started_) {
    // Graceful end (stream ended): what is queued goes out, then the chunked terminator (or the
    // connection's end, HTTP/1.0); the session lives until then (on_body_closed).
    log_access_once(reason);
    body_->end(std::chrono::milliseconds(ctx_.config->http.timeout.count()));
  }
  if (reason) {
    stream_log().info("http-flv: {} closed ({}) {} bytes={} dropped={}", info_.peer, reason, key_.str(),
                      bytes_out(), frames_dropped());
  }
  if (stream_) {
    media::Stream* s = std::exchange(stream_, nullptr);
    s->remove_subscriber(this);
  }
  if (!body_ || !body_->open()) retire_once();
}

void HttpFlvSession::on_body_closed(const std::string& why) {
  if (closed_) return retire_once();  // the graceful end is done (or gave up)
  log_access_once(why.c_str());
  finish(why == "peer closed" ? "client closed" : why.c_str());
}

void HttpFlvSession::log_access_once(const char* reason) {
  if (std::exchange(logged_, true)) return;
  core::SessionAccess a;
  a.protocol = "http-flv";
  a.command = "play";
  a.bytes_in = body_ ? body_->connection().bytes_in() : 0;
  a.bytes_out = bytes_out();
  a.close_reason = reason ? reason : "";
  log_http_session_end(ctx_, request_, key_, a);
}

void HttpFlvSession::retire_once() {
  if (std::exchange(retired_, true)) return;
  ctx_.sessions->retire(this);
}

}  // namespace rill::server
