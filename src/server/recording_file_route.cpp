#include "rill/server/recording_file_route.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "rill/http/http_server.h"
#include "rill/net/blocking_work_thread.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/http_conditional.h"
#include "rill/server/http_admission.h"
#include "rill/server/recording_download.h"

namespace rill::server {

namespace {

// What the work thread found: the file open, its bytes and validators, or a status and why.
struct OpenedFile {
  int status = 200;
  std::string why;
  std::shared_ptr<FileRangeSource> source;
  DownloadHead head;
};

OpenedFile open_file(const std::string& path, protocol::RecordingFormat format) {
  net::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    const int err = errno;
    return OpenedFile{
        err == ENOENT ? 404 : 500, path.substr(path.rfind('/') + 1) + ": " + std::strerror(err), {}, {}};
  }
  OpenedFile f;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  f.source = std::make_shared<FileRangeSource>();
  f.source->runs.push_back({0, 0, size});
  f.source->files.push_back(std::move(fd));
  f.source->index();
  f.head.content_type = format == protocol::RecordingFormat::Flv ? "video/x-flv" : "video/mp4";
  // Built by appends: GCC 12 warns (-Wrestrict, a false positive) on "literal" + std::string here.
  f.head.etag.append(1, '"').append(std::to_string(size)).append(1, '-');
  f.head.etag.append(std::to_string(st.st_mtim.tv_sec))
      .append(1, '.')
      .append(std::to_string(st.st_mtim.tv_nsec));
  f.head.etag.append(1, '"');
  f.head.last_modified = protocol::http_date(st.st_mtim.tv_sec);
  return f;
}

}  // namespace

void RecordingFileRoute::mount(http::HttpServer& http) {
  http.routes().add(http::HttpMethod::Get, std::string(kPrefix), http::PathMatch::Prefix,
                    [this](http::HttpExchange& ex) { serve(ex); });
}

void RecordingFileRoute::serve(http::HttpExchange& ex) {
  ex.set_log_protocol("recording");
  const std::string_view rest = std::string_view(ex.info().path).substr(kPrefix.size());
  const size_t slash = rest.find('/');
  const std::string id(rest.substr(0, slash));
  const std::string file(slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1));
  // An id is 16 hex digits and a file name has no '/': anything else names no recording.
  if (id.size() != 16 || id.find_first_not_of("0123456789abcdef") != std::string::npos || file.empty() ||
      file.find('/') != std::string::npos)
    return ex.reply_error(404, "no recording " + id);
  http::HttpHeld held = ex.hold();
  const bool queued = parts_.work.submit([this, held, id, file, catalog = parts_.catalog,
                                          apps = parts_.apps]() -> net::BlockingWorkThread::Continuation {
    std::optional<record::RecordingEntry> e = catalog->lookup(apps, id);
    if (e && e->path.substr(e->path.rfind('/') + 1) != file) e.reset();
    return [this, held, id, e = std::move(e)] {
      http::HttpExchange* ex = held.get();
      if (!ex) return;
      if (!e) return ex->reply_error(404, "no recording " + id);
      admit(*ex, *e);
    };
  });
  if (!queued) ex.reply_error(503, "too many recording requests waiting; try again");
}

// The gate as for the live HLS of the recording's stream: its token, access rules, on_play.
void RecordingFileRoute::admit(http::HttpExchange& ex, const record::RecordingEntry& e) {
  const auto app = parts_.ctx.config->apps.find(e.app);
  if (app == parts_.ctx.config->apps.end() || !app->second.record.serve || e.name.empty())
    return ex.reply_error(404, "no recording " + e.id);
  const std::optional<media::StreamKey> key = media::StreamKey::make(e.app, e.name);
  if (!key) return ex.reply_error(404, "no recording " + e.id);
  admit_http_play(parts_.ctx, parts_.gate, ex, GateProto::Hls, *key,
                  [this, e](http::HttpExchange& admitted, GateDecision) { send_file(admitted, e); });
}

void RecordingFileRoute::send_file(http::HttpExchange& ex, const record::RecordingEntry& e) {
  if (e.recording) return ex.reply_error(409, "recording " + e.id + " is being written");
  const std::optional<media::StreamKey> key = media::StreamKey::make(e.app, e.name);
  if (!key) return ex.reply_error(404, "no recording " + e.id);
  http::HttpHeld held = ex.hold();
  const bool queued = parts_.work.submit(
      [this, held, key = *key, path = e.path, format = e.format]() -> net::BlockingWorkThread::Continuation {
        OpenedFile f = open_file(path, format);
        return [this, held, key, f = std::move(f)] {
          http::HttpExchange* ex = held.get();
          if (!ex) return;
          if (!f.source) return ex->reply_error(f.status, f.why);
          answer_download(parts_.ctx, parts_.work, *ex, key, f.source, f.head);
        };
      });
  if (!queued) ex.reply_error(503, "too many recording requests waiting; try again");
}

}  // namespace rill::server
