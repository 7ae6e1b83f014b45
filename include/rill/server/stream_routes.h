#pragma once
// The stream paths of http.listen, and the one route that serves them:
//
//   parse_stream_path("/live/cam.flv")             -> Flv          live/cam
//   parse_stream_path("/live/cam.m3u8")            -> HlsPlaylist  live/cam
//   parse_stream_path("/live/cam/12.ts")           -> HlsSegment   live/cam, segment 12
//   parse_stream_path("/live/cam/recording.m3u8")  -> RecordingPlaylist live/cam (docs/recording.md)
//   parse_stream_path("/live/cam/recording.mp4")   -> RecordingMp4 live/cam (docs/recording.md)
//   StreamRoutes: mounts prefix "/" (GET, and so HEAD) on an HttpServer and hands each stream
//                 path to the handler of its kind; a name that breaks the rule gets 400, any
//                 other path (or a kind without a handler) 404.
//
// Names follow the one name rule of media/stream_key.h after percent-decoding (the HTTP router,
// http/http_router.h, decoded the path and refused "..", encoded traversal and control bytes), so
// only a valid key reaches a lookup. Kept out of http/: the generic HTTP stack knows no stream.
// Only the stream server mounts these: a stream path on api.listen is an ordinary 404.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rill/http/http_server.h"
#include "rill/media/stream_key.h"
#include "rill/protocol/hls_playlist.h"
#include "rill/server/http_names.h"

namespace rill::server {

enum class StreamRoute : uint8_t { None, Flv, HlsPlaylist, HlsSegment, RecordingPlaylist, RecordingMp4 };

struct StreamPath {
  StreamRoute kind = StreamRoute::None;
  media::StreamKey key;
  uint64_t segment = 0;                                          // HlsSegment: its number
  protocol::HlsSegmentForm form = protocol::HlsSegmentForm::Ts;  // HlsSegment: .ts, .m4s or init-N.mp4
  bool invalid_name = false;  // kind None: the shape of a stream path with a name that breaks the
                              // rule (400); otherwise not a stream path at all (404)
  std::string why;            // invalid_name: why
};

// `path` is a decoded path (RequestTarget::path). Only the last suffix counts: "a.flv.m3u8" is
// the playlist of the stream "a.flv".
StreamPath parse_stream_path(std::string_view path);

class StreamRoutes {
 public:
  using Handler = std::function<void(HttpExchange&, const StreamPath&)>;

  // `http` outlives this object; the route is mounted by the first set().
  explicit StreamRoutes(HttpServer& http) : http_(http) {}
  StreamRoutes(const StreamRoutes&) = delete;
  StreamRoutes& operator=(const StreamRoutes&) = delete;

  void set(StreamRoute kind, Handler h);

 private:
  void serve(HttpExchange& ex);

  HttpServer& http_;
  std::vector<std::pair<StreamRoute, Handler>> handlers_;
};

}  // namespace rill::server
