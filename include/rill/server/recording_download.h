#pragma once
// RecordingDownload: one download of a recording (GET /recordings/{id}/{file} or
// /{app}/{name}/recording.mp4, docs/recording.md "Downloads") as a session of the worker's
// SessionSet, so that it is seen and handled as players are: a SessionKind::Download session
// (protocol "download", its stream the recording's app/name), it is listed by GET /api/v1/clients
// as a player with proto "download" but not counted among the live stream's players, counted in
// rill_connections{proto="download"} and rill_connections_accepted_total{proto="download"}, closed
// by DELETE /api/v1/clients/{id}, and waited for by a retiring worker after a reload while it
// makes progress (server/worker_retirement.h). Its body is a FileRangeBody, which closes it when
// its client takes no byte for http.timeout ("send timeout", counted by the SessionSet for
// rill_download_send_timeouts_total); the access log line is written when it ends.
//
// answer_download() is the response both routes give once they know the bytes: the conditional
// request (RFC 9110 §13) and Range handling, the head, and for a GET the session.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "rill/http/http_exchange.h"
#include "rill/media/stream_key.h"
#include "rill/net/worker_core.h"
#include "rill/server/file_range_body.h"
#include "rill/server/session_access.h"

namespace rill::server {

// The response's own headers and validators (RFC 9110 §8.8): a strong ETag that changes whenever
// the bytes may, and the Last-Modified date.
struct DownloadHead {
  std::string content_type;
  std::string disposition;    // Content-Disposition; "" for none
  std::string cache_control;  // "" for none
  std::string etag;           // with its quotes
  std::string last_modified;
};

// Answers `ex` with `source`'s bytes, in this order (§13.2.2):
//   - If-None-Match that matches the ETag (weak comparison, or "*"), or, when there is no
//     If-None-Match, an If-Modified-Since date not before Last-Modified (§13.1.3): 304 with the
//     validators;
//   - Range of one byte range: 206 with Content-Range, 416 when unsatisfiable — unless an If-Range
//     does not match (a strong ETag or the exact Last-Modified date, §13.1.5): then 200, whole;
//   - else 200, whole.
// HEAD gets the head alone; a GET's body streams as a RecordingDownload of `key`.
void answer_download(net::WorkerCore& ctx, net::BlockingWorkThread& work, http::HttpExchange& ex,
                     const media::StreamKey& key, std::shared_ptr<const FileRangeSource> source,
                     const DownloadHead& head);

class RecordingDownload final : public net::Session {
 public:
  // `ex` is read here only (its request, for describe() and the access log).
  RecordingDownload(net::WorkerCore& ctx, const http::HttpExchange& ex, const media::StreamKey& key);
  ~RecordingDownload() override;

  // Takes the body over and starts sending it.
  void start(std::unique_ptr<FileRangeBody> body);
  void close(const char* reason) override;
  net::SessionInfo describe() const override;
  // The body's end (FileRangeBody::Ended): "" once sent whole.
  void ended(const std::string& reason);

 private:
  void finish(const std::string& reason);

  net::WorkerCore& ctx_;
  HttpSessionRequest request_;  // peer, query, start time, agent (the access log)
  media::StreamKey key_;
  std::unique_ptr<FileRangeBody> body_;
  bool finished_ = false;
};

}  // namespace rill::server
