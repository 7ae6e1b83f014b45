#include "rill/server/stream_routes.h"

#include <charconv>

#include "rill/core/access_line.h"

namespace rill::server {

namespace {

bool strip_suffix(std::string_view& s, std::string_view suffix) {
  if (!s.ends_with(suffix)) return false;
  s.remove_suffix(suffix.size());
  return true;
}

// A stream path's names checked by the one name rule (media::StreamKey::make).
// Names that follow the rule (nearly every request) are constructed in the path's key: no
// optional key built and moved, no assignment; the reason is only made for a name that breaks it.
StreamPath stream_path(StreamRoute kind, std::string_view app, std::string_view name, uint64_t segment) {
  if (!media::is_valid_name(app) || !media::is_valid_name(name)) {
    StreamPath r;
    media::StreamKey::make(app, name, &r.why);
    r.invalid_name = true;
    return r;
  }
  return StreamPath{kind,    media::StreamKey{std::string(app), std::string(name)},
                    segment, protocol::HlsSegmentForm::Ts,
                    false,   {}};
}

}  // namespace

StreamPath parse_stream_path(std::string_view path) {
  if (path.empty() || path[0] != '/') return {};
  // At most three segments after the leading '/'.
  std::string_view seg[3];
  size_t n = 0;
  for (std::string_view rest = path.substr(1);;) {
    if (n == 3) return {};
    const auto slash = rest.find('/');
    seg[n++] = rest.substr(0, slash);
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (n == 2) {  // /APP/STREAM.flv, /APP/STREAM.m3u8
    std::string_view file = seg[1];
    if (strip_suffix(file, ".flv")) return stream_path(StreamRoute::Flv, seg[0], file, 0);
    if (strip_suffix(file, ".m3u8")) return stream_path(StreamRoute::HlsPlaylist, seg[0], file, 0);
    return {};
  }
  if (n == 3) {  // /APP/STREAM/SEQ.ts, /APP/STREAM/SEQ.m4s, /APP/STREAM/init-ID.mp4
    if (seg[2] == "recording.m3u8") return stream_path(StreamRoute::RecordingPlaylist, seg[0], seg[1], 0);
    if (seg[2] == "recording.mp4") return stream_path(StreamRoute::RecordingMp4, seg[0], seg[1], 0);
    const auto split = protocol::split_hls_segment_file(seg[2]);
    if (!split) return {};
    const std::string_view file = split->second;
    StreamPath r = stream_path(StreamRoute::HlsSegment, seg[0], seg[1], 0);
    if (r.kind == StreamRoute::None) return r;  // a name breaks the rule
    r.form = split->first;
    auto [p, ec] = std::from_chars(file.data(), file.data() + file.size(), r.segment);
    if (file.empty() || ec != std::errc() || p != file.data() + file.size()) return {};
    return r;
  }
  return {};
}

void StreamRoutes::set(StreamRoute kind, Handler h) {
  // The stream paths are mounted by the first handler: a server with none (the API's) has none.
  if (handlers_.empty()) {
    http_.routes().add(HttpMethod::Get, "/", PathMatch::Prefix, [this](HttpExchange& ex) { serve(ex); });
  }
  handlers_.emplace_back(kind, std::move(h));
}

void StreamRoutes::serve(HttpExchange& ex) {
  const HttpRequestInfo& info = ex.info();
  const StreamPath sp = parse_stream_path(info.path);
  if (sp.invalid_name) {
    http_.context().log->info("http: {} bad request '{:.200}': {}", info.peer,
                              core::redact_target(info.target, http_.context().config->log.redact_params),
                              sp.why);
    return ex.reply_error(400, sp.why);
  }
  if (sp.kind == StreamRoute::HlsPlaylist || sp.kind == StreamRoute::HlsSegment ||
      sp.kind == StreamRoute::RecordingPlaylist)
    ex.set_log_protocol("hls");
  if (sp.kind == StreamRoute::Flv) ex.set_log_protocol("http-flv");  // a refusal or a HEAD
  if (sp.kind == StreamRoute::RecordingMp4) ex.set_log_protocol("recording");
  for (auto& [kind, handler] : handlers_) {
    if (sp.kind != StreamRoute::None && kind == sp.kind) return handler(ex, sp);
  }
  ex.reply_error(404, "not found");
}

}  // namespace rill::server
