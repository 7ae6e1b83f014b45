#pragma once
// HttpFlvSession: one HTTP-FLV response (GET /APP/STREAM.flv) as a hub subscriber. The FLV file
// header goes first, then metadata, sequence headers and the GOP cache, then live tags. Each tag
// is serialized once per stream (MediaFrame::flv_tag), so 1000 clients share one buffer per tag.
//
// Plain HTTP (GET): once admitted, the socket is taken from evhttp (http_takeover.h) and the
// response goes on as an HttpBodyStream, on the RTMP write path (one sendmsg per flush, chunked
// per batch for HTTP/1.1, close-delimited for HTTP/1.0). HTTPS stays on evhttp (OpenSSL lives in
// its bufferevent): the tags go to libevent by reference and evhttp frames them. HEAD is answered
// by evhttp with the headers alone.
#include <memory>

#include "rill/media/output_queue.h"
#include "rill/media/stream.h"
#include "rill/server/http_body_stream.h"
#include "rill/server/http_router.h"
#include "rill/net/server_context.h"

struct evhttp_request;
struct evhttp_connection;

namespace rill::server {

class HttpServer;

class HttpFlvSession final : public net::Session, public net::Flushable, public media::Subscriber {
 public:
  HttpFlvSession(net::ServerContext& ctx, HttpServer& http, evhttp_request* req, const HttpRequestInfo& info,
                 const StreamPath& route);
  ~HttpFlvSession() override;

  // Called by the route handler: answers 404 or starts the response.
  void start(media::Stream* s);
  void close(const char* reason) override;
  net::SessionInfo describe() const override;

  void flush() override;
  void on_frame(const media::FramePtr& frame) override;
  void on_gop_replay(bool active) override { queue().set_replay(active); }
  void on_publish(media::Stream&) override {}
  void on_unpublish(media::Stream&) override {}
  void on_stream_end(media::Stream& s) override;

 private:
  static void on_conn_close(evhttp_connection* conn, void* arg);
  static void on_chunk_written(evhttp_connection* conn, void* arg);
  void finish(const char* reason);
  void flush_queue_to_evhttp(bool want_callback);
  // Plain HTTP: the response head and the body on a taken-over socket; false for HTTPS.
  bool take_over();
  void on_body_closed(const std::string& reason);
  void log_access_once();
  void retire_once();
  // Where frames wait: the body stream's pending queue, or our own (evhttp path).
  media::OutputQueue& queue() { return body_ ? body_->pending() : queue_; }
  const media::OutputQueue& queue() const { return body_ ? body_->pending() : queue_; }
  uint64_t bytes_out() const { return body_ ? body_->body_bytes() : bytes_; }

  net::ServerContext& ctx_;
  HttpServer& http_;
  evhttp_request* req_;
  HttpRequestInfo info_;  // peer, query, start time (the access log)
  media::StreamKey key_;
  media::Stream* stream_ = nullptr;
  media::OutputQueue queue_;
  bool started_ = false;
  bool in_flight_ = false;  // a batch is in evhttp's output, not yet written to the socket
  bool closed_ = false;   // no more media (finish() ran); the body may still be ending
  bool retired_ = false;  // handed to SessionSet::retire
  bool logged_ = false;   // the access log line is written
  std::unique_ptr<HttpBodyStream> body_;  // plain HTTP, once taken over
  uint64_t frames_out_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace rill::server
