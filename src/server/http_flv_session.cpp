#include "rill/server/http_flv_session.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/http_struct.h>

#include "rill/net/send_buffer.h"
#include "rill/protocol/flv_file.h"
#include "rill/server/http_server.h"
#include "rill/server/http_takeover.h"

namespace rill::server {

HttpFlvSession::HttpFlvSession(net::ServerContext& ctx, HttpServer& http, evhttp_request* req,
                               const HttpRequestInfo& info, const StreamPath& route)
    : net::Session(net::SessionProtocol::HttpFlv),
      ctx_(ctx),
      http_(http),
      req_(req),
      info_(info),
      key_(route.key),
      queue_(net::queue_limits_for(ctx.config->find_app(route.key.app))) {
  set_id(info.id);
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
  i.queued_bytes = body_ ? body_->queued_bytes() : queue_.bytes();
  i.frames_out = frames_out_;
  i.dropped_frames = queue().frames_dropped();
  return i;
}

HttpFlvSession::~HttpFlvSession() {
  if (!retired_) close("destroyed");
}

// `s` is the stream the gate admitted this player to (null for a HEAD probe).
void HttpFlvSession::start(media::Stream* s) {
  if (!s && info_.method != HttpMethod::Head) {
    http_.reply_error(req_, info_, 500, "no stream for " + key_.str());
    req_ = nullptr;
    return finish("no stream");
  }
  evkeyvalq* h = evhttp_request_get_output_headers(req_);
  evhttp_add_header(h, "Content-Type", "video/x-flv");
  evhttp_add_header(h, "Cache-Control", "no-cache, no-store");
  http_.add_cors_headers(req_);
  // Plain-HTTP GET: the socket leaves evhttp (take_over). HTTPS stays on evhttp, whose bufferevent
  // holds the TLS session; HEAD is answered by evhttp with the headers alone.
  if (info_.method == HttpMethod::Head || !take_over()) {
    if (!http_.start_stream(req_, 200)) {  // HEAD: answered with the headers
      http_.log_access(info_, 200, 0);
      logged_ = true;
      req_ = nullptr;
      return finish(nullptr);
    }
    http_.set_close_callback(evhttp_request_get_connection(req_), &HttpFlvSession::on_conn_close, this);
    // The queue bounds hold in seconds only if the kernel does not buffer megabytes first.
    if (bufferevent* bev = evhttp_connection_get_bufferevent(evhttp_request_get_connection(req_)))
      net::limit_kernel_send_queue(static_cast<int>(bufferevent_getfd(bev)), ctx_.config->http.send_buffer,
                                   ctx_.config->http.notsent_lowat);
  }
  started_ = true;
  const media::StreamInfo& info = s->info();
  bool known = info.has_audio || info.has_video;
  auto header = protocol::flv_file_header(known ? info.has_audio : true, known ? info.has_video : true);
  queue().push_control(SharedBuffer::copy_of(std::span<const uint8_t>(header)));
  stream_ = s;
  ctx_.log->info("http-flv: {} playing {}", info_.peer, key_.str());
  s->add_subscriber(this);          // replays metadata, sequence headers and the GOP cache
  ctx_.flusher->request_now(this);  // that first burst is never held by write merging
}

void HttpFlvSession::on_frame(const media::FramePtr& f) {
  if (closed_) return;
  auto r = queue().push_frame(*f, f->flv_tag());
  if (r == media::OutputQueue::PushResult::Queued) ++frames_out_;
  if (r == media::OutputQueue::PushResult::Overflow) {
    ctx_.log->warn("http-flv: {} player of {} too slow ({} bytes, {} ms queued), disconnecting", info_.peer,
                   key_.str(), queue().bytes(), queue().duration_ms());
    close("slow consumer");
    return;
  }
  // A batch still on its way (body stream) makes flush() wait for it; a catch-up request then
  // costs nothing.
  ctx_.flusher->request_frame(this, f->type == media::MediaType::Video, queue().duration_ms());
}

void HttpFlvSession::on_stream_end(media::Stream&) {
  stream_ = nullptr;  // the hub detached us
  finish("stream ended");
}

void HttpFlvSession::on_chunk_written(evhttp_connection*, void* arg) {
  auto* self = static_cast<HttpFlvSession*>(arg);
  self->in_flight_ = false;
  self->flush();
}

void HttpFlvSession::flush() {
  if (body_) return closed_ ? void() : body_->flush();
  if (closed_ || !req_ || in_flight_ || queue_.empty()) return;
  // Hand everything queued to evhttp as one chunk. The next batch waits in our own queue (where
  // the slow-consumer policy applies) until this one reached the socket.
  flush_queue_to_evhttp(true);
}

void HttpFlvSession::flush_queue_to_evhttp(bool want_callback) {
  if (queue_.empty()) return;
  evbuffer* b = evbuffer_new();
  // By reference: the tag bytes stay in the stream's shared buffers; libevent releases each
  // reference once the bytes reached the socket.
  queue_.drain_to([b](const BufferRef& buf, size_t off, size_t len) {
    buf->ref();
    evbuffer_add_reference(
        b, buf.data() + off, len,
        [](const void*, size_t, void* extra) { static_cast<SharedBuffer*>(extra)->unref(); }, buf.get());
  });
  bytes_ += evbuffer_get_length(b);
  in_flight_ = want_callback;
  evhttp_send_reply_chunk_with_cb(req_, b, want_callback ? &HttpFlvSession::on_chunk_written : nullptr,
                                  want_callback ? this : nullptr);
  evbuffer_free(b);
}

void HttpFlvSession::on_conn_close(evhttp_connection*, void* arg) {
  auto* self = static_cast<HttpFlvSession*>(arg);
  evhttp_request* req = std::exchange(self->req_, nullptr);
  if (req) {
    self->log_access_once();
    // A client that went away in the middle of a response leaves the request detached from its
    // connection (libevent frees it only once the handler is done with it): free it here.
    if (evhttp_request_get_connection(req) == nullptr) evhttp_request_free(req);
  }
  self->finish("client closed");
}

void HttpFlvSession::close(const char* reason) {
  if (retired_) return;
  if (body_) {
    if (started_) log_access_once();
    body_->close(reason);  // an ending body too: the worker stops
  } else if (req_ && started_) {
    // Abort the connection: the client is too slow or the worker stops.
    evhttp_connection* conn = evhttp_request_get_connection(req_);
    http_.set_close_callback(conn, nullptr, nullptr);
    log_access_once();
    req_ = nullptr;
    evhttp_connection_free(conn);
  }
  if (closed_) return retire_once();
  finish(reason);
}

void HttpFlvSession::finish(const char* reason) {
  if (closed_) return;
  closed_ = true;
  ctx_.flusher->forget(this);
  if (body_ && body_->open() && started_) {
    // Graceful end (stream ended): what is queued goes out, then the chunked terminator (or the
    // connection's end, HTTP/1.0); the session lives until then (on_body_closed).
    log_access_once();
    body_->end(std::chrono::milliseconds(ctx_.config->http.timeout.count()));
  } else if (req_ && started_) {
    // Graceful end (stream ended): what is queued goes out, then the chunked terminator.
    in_flight_ = false;
    flush_queue_to_evhttp(false);
    http_.set_close_callback(evhttp_request_get_connection(req_), nullptr, nullptr);
    log_access_once();
    evhttp_send_reply_end(req_);
    req_ = nullptr;
  }
  if (reason) {
    ctx_.log->info("http-flv: {} closed ({}) {} bytes={} dropped={}", info_.peer, reason, key_.str(),
                   bytes_out(), queue().frames_dropped());
  }
  if (stream_) {
    media::Stream* s = std::exchange(stream_, nullptr);
    s->remove_subscriber(this);
  }
  queue_.clear();
  if (!body_ || !body_->open()) retire_once();
}

// ---- plain HTTP on a taken-over socket ----------------------------------------------------------

bool HttpFlvSession::take_over() {
  TakenConnection taken = http_.take_over(req_);
  if (!taken) return false;
  // HTTP/1.1 clients get chunks (they can tell the end of the stream from a cut); HTTP/1.0 ones
  // a body that ends with the connection (RFC 9112 §6.3: no length, read until the close).
  const bool chunked = req_->major > 1 || (req_->major == 1 && req_->minor >= 1);
  const std::string head = render_response_head(req_, 200, "OK", chunked);
  req_ = nullptr;  // evhttp frees it with its connection, on the next loop turn
  body_ = std::make_unique<HttpBodyStream>(ctx_, std::move(taken), info_.peer, chunked,
                                           net::queue_limits_for(ctx_.config->find_app(key_.app)),
                                           [this](const std::string& why) { on_body_closed(why); });
  // The queue bounds hold in seconds only if the kernel does not buffer megabytes first.
  net::limit_kernel_send_queue(body_->fd(), ctx_.config->http.send_buffer, ctx_.config->http.notsent_lowat);
  body_->start(head);
  return true;
}

void HttpFlvSession::on_body_closed(const std::string& why) {
  if (closed_) return retire_once();  // the graceful end is done (or gave up)
  log_access_once();
  finish(why == "peer closed" ? "client closed" : why.c_str());
}

void HttpFlvSession::log_access_once() {
  if (std::exchange(logged_, true)) return;
  http_.log_access(info_, 200, bytes_out());
}

void HttpFlvSession::retire_once() {
  if (std::exchange(retired_, true)) return;
  ctx_.sessions->retire(this);
}

}  // namespace rill::server
