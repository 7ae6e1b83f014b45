#include "rill/server/recording_file_route.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>

#include "rill/core/buffer.h"
#include "rill/http/http_server.h"
#include "rill/net/blocking_work_thread.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/http_byte_range.h"
#include "rill/server/http_admission.h"

namespace rill::server {

namespace {

using Kind = protocol::ByteRangeRequest::Kind;

std::string http_date(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[40];
  const size_t n = std::strftime(out, sizeof out, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(out, n);
}

// What the work thread read: the status, its headers' values and the body (or why not).
struct FileAnswer {
  int status = 200;
  std::string why;  // an error's
  uint64_t size = 0;
  protocol::ByteRangeRequest range;
  std::string etag, last_modified;
  BufferRef body;
};

FileAnswer read_file_range(const std::string& path, const std::string& range_header, uint64_t max_body) {
  FileAnswer a;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    a.status = errno == ENOENT ? 404 : 500;
    a.why = path.substr(path.rfind('/') + 1) + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return a;
  }
  a.size = static_cast<uint64_t>(st.st_size);
  // Built by appends: GCC 12 warns (-Wrestrict, a false positive) on "literal" + std::string here.
  a.etag.append(1, '"').append(std::to_string(a.size)).append(1, '-');
  a.etag.append(std::to_string(st.st_mtim.tv_sec)).append(1, '.').append(std::to_string(st.st_mtim.tv_nsec));
  a.etag.append(1, '"');
  a.last_modified = http_date(st.st_mtim.tv_sec);
  a.range = protocol::parse_byte_range(range_header, a.size);
  uint64_t first = 0, length = a.size;
  if (a.range.kind == Kind::Unsatisfiable) {
    ::close(fd);
    return FileAnswer{416, "range not satisfiable", a.size, a.range, a.etag, a.last_modified, {}};
  }
  if (a.range.kind == Kind::Partial) {
    a.status = 206;
    if (a.range.length() > max_body) a.range.last = a.range.first + max_body - 1;
    first = a.range.first;
    length = a.range.length();
  } else if (length > max_body) {
    ::close(fd);
    a.status = 413;
    a.why = "the file is larger than " + std::to_string(max_body) + " bytes: ask for it with Range";
    return a;
  }
  std::vector<uint8_t> bytes(length);
  uint64_t got = 0;
  while (got < length) {
    const ssize_t n = ::pread(fd, bytes.data() + got, length - got, static_cast<off_t>(first + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (got < length) return FileAnswer{500, "short read", a.size, a.range, {}, {}, {}};
  a.body = SharedBuffer::copy_of(std::span<const uint8_t>(bytes));
  return a;
}

void reply_file(http::HttpExchange& ex, const FileAnswer& a, protocol::RecordingFormat format) {
  if (a.status == 416) ex.add_header("Content-Range", protocol::content_range(a.range, a.size));
  if (a.status != 200 && a.status != 206) return ex.reply_error(a.status, a.why);
  ex.add_cors_headers();
  ex.add_header("Content-Type", format == protocol::RecordingFormat::Flv ? "video/x-flv" : "video/mp4");
  ex.add_header("Accept-Ranges", "bytes");
  ex.add_header("ETag", a.etag);
  ex.add_header("Last-Modified", a.last_modified);
  if (a.status == 206) ex.add_header("Content-Range", protocol::content_range(a.range, a.size));
  ex.reply(a.status, a.body);
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
    std::optional<record::RecordingEntry> e = catalog->find(apps, id);
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
  const std::string_view* range = ex.header("Range");
  http::HttpHeld held = ex.hold();
  const bool queued = parts_.work.submit(
      [held, path = e.path, format = e.format,
       range = range ? std::string(*range) : std::string()]() -> net::BlockingWorkThread::Continuation {
        FileAnswer a = read_file_range(path, range, kMaxBody);
        return [held, format, a = std::move(a)] {
          if (http::HttpExchange* ex = held.get()) reply_file(*ex, a, format);
        };
      });
  if (!queued) ex.reply_error(503, "too many recording requests waiting; try again");
}

}  // namespace rill::server
