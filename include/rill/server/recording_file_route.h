#pragma once
// GET|HEAD /recordings/{id}/{file name}: a recording file, read-only (docs/recording.md,
// "Playback"). The id is the API's (record/recording_catalog.h), resolved through the catalog's
// index of the recording roots (RecordingCatalog::lookup) on the worker's BlockingWorkThread, so no
// request names a file outside them; the file name must be the file's own.
//
//   - Auth: the request asks the worker's StreamGate as a live HLS request of the recording's
//     app and stream name would (access rules, the token of that name in the query, on_play).
//   - The answer (server/recording_download.h): ETag (size and mtime) and Last-Modified,
//     If-None-Match (304), Range of one byte range (206 + Content-Range; 416 when unsatisfiable; a
//     header this does not take is ignored, protocol/http_byte_range.h, RFC 9110 §14.2) unless
//     If-Range does not match (200, whole), Content-Type video/mp4 or video/x-flv. Any size: the
//     body streams from the file (FileRangeBody), a GET is a RecordingDownload session.
//   - A file still being written: 409. apps.NAME.record.serve false: 404.
// Nothing here reads a file on the event loop.
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "rill/http/http_exchange.h"
#include "rill/record/recording_catalog.h"

namespace rill::net {
struct WorkerCore;
class BlockingWorkThread;
}  // namespace rill::net

namespace rill::http {
class HttpServer;
}

namespace rill::server {

class StreamGate;

// What the recording playback routes share: the worker's core and gate, its file thread, the
// catalog (used on that thread only) and the apps that record. What it names outlives the routes;
// the work thread is destroyed before them.
struct RecordingRouteParts {
  net::WorkerCore& ctx;
  StreamGate& gate;
  net::BlockingWorkThread& work;
  std::shared_ptr<record::RecordingCatalog> catalog;
  std::vector<record::RecordingCatalog::App> apps;
};

class RecordingFileRoute {
 public:
  static constexpr std::string_view kPrefix = "/recordings/";

  explicit RecordingFileRoute(RecordingRouteParts parts) : parts_(std::move(parts)) {}
  RecordingFileRoute(const RecordingFileRoute&) = delete;
  RecordingFileRoute& operator=(const RecordingFileRoute&) = delete;

  void mount(http::HttpServer& http);

 private:
  void serve(http::HttpExchange& ex);
  void admit(http::HttpExchange& ex, const record::RecordingEntry& e);
  void send_file(http::HttpExchange& ex, const record::RecordingEntry& e);

  RecordingRouteParts parts_;
};

}  // namespace rill::server
