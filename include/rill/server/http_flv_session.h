#pragma once
// HttpFlvSession: one HTTP-FLV response (GET /APP/STREAM.flv) as a hub subscriber. The FLV file
// header goes first, then metadata, sequence headers and the GOP cache, then live tags. Each tag
// is serialized once per stream, framed as one HTTP/1.1 chunk for chunked players
// (MediaFrame::flv_chunk) or bare for HTTP/1.0 ones (MediaFrame::flv_tag), so 1000 clients share
// one buffer per tag.
//
// Once admitted, the response head is written and the connection handed over
// (HttpExchange::take_stream): the body goes on as an HttpBodyStream, on the RTMP write path (the
// connection's queue and write merging, one sendmsg per flush), over HTTP and HTTPS alike. HEAD is
// answered with the head alone.
#include <memory>

#include "rill/core/stream_log.h"
#include "rill/http/http_body_stream.h"
#include "rill/http/http_exchange.h"
#include "rill/http/http_router.h"
#include "rill/media/output_queue.h"
#include "rill/media/stream.h"
#include "rill/net/worker_core.h"
#include "rill/server/http_names.h"
#include "rill/server/session_access.h"
#include "rill/server/stream_routes.h"

namespace rill::server {

class HttpFlvSession final : public net::Session, public media::Subscriber {
 public:
  // `ex` is used by start() only, which must run in the same callback.
  HttpFlvSession(net::WorkerCore& ctx, HttpExchange& ex, const StreamPath& route);
  ~HttpFlvSession() override;

  // Called by the route handler: answers 500 or starts the response.
  void start(media::Stream* s);
  void close(const char* reason) override;
  net::SessionInfo describe() const override;

  void on_frame(const media::FramePtr& frame) override;
  void on_gop_replay(bool active) override {
    if (body_) body_->connection().queue().set_replay(active);
  }
  void on_publish(media::Stream&) override {}
  void on_unpublish(media::Stream&) override {}
  void on_stream_end(media::Stream& s) override;

 private:
  void finish(const char* reason);
  void on_body_closed(const std::string& reason);
  void log_access_once(const char* reason);  // the session's access log line (session_access.h)
  core::StreamLog stream_log() const { return {*ctx_.log, key_.str()}; }  // the worker's, about key_
  void retire_once();
  uint64_t bytes_out() const { return body_ ? body_->body_bytes() : 0; }
  uint64_t frames_dropped() const { return body_ ? body_->connection().queue().frames_dropped() : 0; }

  net::WorkerCore& ctx_;
  HttpExchange* ex_;             // until start()
  HttpSessionRequest request_;   // peer, query, start time, agent (the access log)
  const HttpRequestInfo& info_;  // request_.info
  media::StreamKey key_;
  media::Stream* stream_ = nullptr;
  bool started_ = false;
  bool closed_ = false;                   // no more media (finish() ran); the body may still be ending
  bool retired_ = false;                  // handed to SessionSet::retire
  bool logged_ = false;                   // the access log line is written
  std::unique_ptr<HttpBodyStream> body_;  // once the stream was taken (GET)
  uint64_t frames_out_ = 0;
};

}  // namespace rill::server
