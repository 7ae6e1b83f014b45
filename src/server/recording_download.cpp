#include "rill/server/recording_download.h"

#include <utility>

#include "rill/protocol/http_byte_range.h"
#include "rill/protocol/http_conditional.h"

namespace rill::server {

namespace {

using Kind = protocol::ByteRangeRequest::Kind;

// §13.2.2 steps 3 and 4: If-None-Match when the request has one, else If-Modified-Since (GET and
// HEAD only): true when the answer is 304.
bool not_modified(const http::HttpExchange& ex, const DownloadHead& head) {
  if (const std::string_view* inm = ex.header("If-None-Match"))
    return protocol::if_none_match(*inm, head.etag);
  const http::HttpMethod method = ex.info().method;
  if (method != http::HttpMethod::Get && method != http::HttpMethod::Head) return false;
  const std::string_view* ims = ex.header("If-Modified-Since");
  return ims && protocol::not_modified_since(*ims, head.last_modified);
}

// The Range to answer: none (whole) unless the request has one and its If-Range, if any, matches.
protocol::ByteRangeRequest range_to_answer(const http::HttpExchange& ex, const DownloadHead& head,
                                           uint64_t size) {
  const std::string_view* range = ex.header("Range");
  if (!range) return {};
  if (const std::string_view* if_range = ex.header("If-Range");
      if_range && !protocol::if_range_matches(*if_range, head.etag, head.last_modified))
    return {};  // §13.1.5: the representation changed, send it whole
  return protocol::parse_byte_range(*range, size);
}

}  // namespace

void answer_download(net::WorkerCore& ctx, net::BlockingWorkThread& work, http::HttpExchange& ex,
                     const media::StreamKey& key, std::shared_ptr<const FileRangeSource> source,
                     const DownloadHead& head) {
  const uint64_t size = source->size;
  ex.add_header("ETag", head.etag);
  ex.add_header("Last-Modified", head.last_modified);
  ex.add_header("Accept-Ranges", "bytes");
  if (not_modified(ex, head)) {
    ex.add_cors_headers();
    if (!head.cache_control.empty()) ex.add_header("Cache-Control", head.cache_control);
    ex.reply(304, std::string_view());  // §15.4.5: the validators, no body
    return;
  }
  const protocol::ByteRangeRequest range = range_to_answer(ex, head, size);
  if (range.kind == Kind::Unsatisfiable) {
    ex.add_header("Content-Range", protocol::content_range(range, size));
    return ex.reply_error(416, "range not satisfiable");  // with the CORS headers
  }
  ex.add_cors_headers();
  const bool partial = range.kind == Kind::Partial;
  ex.add_header("Content-Type", head.content_type);
  if (!head.cache_control.empty()) ex.add_header("Cache-Control", head.cache_control);
  if (!head.disposition.empty()) ex.add_header("Content-Disposition", head.disposition);
  if (partial) ex.add_header("Content-Range", protocol::content_range(range, size));
  auto session = std::make_unique<RecordingDownload>(ctx, ex, key);
  http::HttpStreamHandover taken = ex.take_stream(partial ? 206 : 200, partial ? range.length() : size);
  if (!taken) {  // HEAD: answered with the head alone
    if (taken.release_slot) taken.release_slot();
    return;
  }
  RecordingDownload* d = static_cast<RecordingDownload*>(ctx.sessions->add(std::move(session)));
  auto body = std::make_unique<FileRangeBody>(ctx, work, std::move(taken), std::move(source),
                                              partial ? range.first : 0, partial ? range.length() : size,
                                              "download of " + key.str(),
                                              [d](const std::string& reason) { d->ended(reason); });
  d->start(std::move(body));
}

RecordingDownload::RecordingDownload(net::WorkerCore& ctx, const http::HttpExchange& ex,
                                     const media::StreamKey& key)
    : net::Session(net::SessionProtocol::Download), ctx_(ctx), request_(ctx, ex), key_(key) {
  set_id(request_.info.id);
}

RecordingDownload::~RecordingDownload() = default;

void RecordingDownload::start(std::unique_ptr<FileRangeBody> body) {
  body_ = std::move(body);
  body_->start();
}

net::SessionInfo RecordingDownload::describe() const {
  net::SessionInfo i;
  i.id = id();
  i.kind = net::SessionKind::Download;
  i.protocol = net::session_protocol_name(protocol());
  i.peer = request_.info.peer;
  i.stream = key_.str();
  i.since_ms = request_.info.started_ms;
  if (body_) {
    i.bytes_in = body_->bytes_in();
    i.bytes_out = body_->body_bytes();
    i.queued_bytes = body_->queued_bytes();
  }
  return i;
}

void RecordingDownload::close(const char* reason) {
  if (finished_) return;
  if (body_) body_->close(reason);
  finish(reason);
}

void RecordingDownload::ended(const std::string& reason) {
  if (reason == FileRangeBody::kSendTimeout) ctx_.sessions->note_send_timeout(protocol());  // /metrics
  finish(reason.empty() ? "sent" : reason);
}

// The access log line, then the SessionSet destroys the session after this callback.
void RecordingDownload::finish(const std::string& reason) {
  if (std::exchange(finished_, true)) return;
  core::SessionAccess a;
  a.protocol = "recording";
  a.command = "download";
  a.bytes_in = body_ ? body_->bytes_in() : 0;
  a.bytes_out = body_ ? body_->body_bytes() : 0;
  a.close_reason = reason;
  log_http_session_end(ctx_, request_, key_, a);
  ctx_.sessions->retire(this);
}

}  // namespace rill::server
