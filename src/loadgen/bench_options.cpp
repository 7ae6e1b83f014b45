#include "bench_options.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include "av1_opus_source.h"

namespace rill::loadgen {

const char* to_string(Mode m) {
  switch (m) {
    case Mode::RtmpPublish:
      return "rtmp-publish";
    case Mode::RtmpPlay:
      return "rtmp-play";
    case Mode::FlvPlay:
      return "flv-play";
    case Mode::HlsPlay:
      return "hls-play";
    case Mode::Fanout:
      return "fanout";
  }
  return "?";
}

std::string usage() {
  return R"(usage: rill-bench MODE URL [options]
modes:
  rtmp-publish rtmp://host/app/stream -c N -i FILE.flv
      N publishers looping FILE.flv in real time (stream names get _0.._N-1 when N > 1)
  rtmp-play    rtmp://host/app/stream -c N       N RTMP players
  flv-play     http://host/app/stream.flv -c N   N HTTP-FLV players (--http10: HTTP/1.0)
  hls-play     http://host/app/stream.m3u8 -c N  N HLS players
  fanout --publish rtmp://host/app/stream -i FILE.flv --rtmp-players N
         [--flv-url http://host/app/stream.flv --flv-players M]
      one publisher and its players in one process; measures the latency the server adds
options:
  -c N               connections (default 1)
  -d SECONDS         run length; bounds every run (default 10)
  --track FILE.flv   rtmp-publish: one more video track (repeat for more): an E-RTMP v2 multitrack
                     publish, each video tag a ManyTracks tag of -i's (track 0) and the --track
                     files' (tracks 1..) tags at that position; audio: -i's, as track 0
  -i FILE.flv        media to publish (looped, timestamps keep increasing); FILE.h265 (.265,
                     .hevc): an H.265 Annex B stream, published as Enhanced RTMP hvc1 at 25 fps;
                     FILE.ivf: AV1, published as Enhanced RTMP av01
  --audio FILE.ogg   with -i FILE.ivf: Opus audio (Ogg), published as Enhanced RTMP Opus
  --ramp R           new connections per second (default 200)
  --threads T        event-loop threads (default 1)
  --http10           HTTP/1.0 requests (flv-play, hls-play)
  --setup-timeout S  seconds a connection may take to start playing/publishing (default 10)
  --quiet            no progress line on stderr
The JSON report goes to stdout at the end; progress goes to stderr once a second.
)";
}

namespace {

bool to_int(std::string_view s, int& out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool to_double(std::string_view s, double& out) {
  // std::from_chars for double is in libstdc++ 11+.
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(out);
}

}  // namespace

namespace {

std::optional<Mode> parse_mode(std::string_view mode) {
  if (mode == "rtmp-publish") return Mode::RtmpPublish;
  if (mode == "rtmp-play") return Mode::RtmpPlay;
  if (mode == "flv-play") return Mode::FlvPlay;
  if (mode == "hls-play") return Mode::HlsPlay;
  if (mode == "fanout") return Mode::Fanout;
  return std::nullopt;
}

// The command line after MODE, before the checks that depend on the mode.
struct Scanned {
  Options o;
  std::optional<std::string> positional;
  std::optional<std::string> publish_url, flv_url;
  bool saw_c = false;
};

// -c, --rtmp-players, --flv-players, --threads.
std::string set_count(Scanned& sc, const std::string& a, const std::string& v) {
  int n = 0;
  if (!to_int(v, n) || n < 0) return a + ": expected a non-negative integer, got '" + v + "'";
  if (a == "-c") {
    sc.o.connections = n;
    sc.saw_c = true;
  } else if (a == "--rtmp-players") {
    sc.o.rtmp_players = n;
  } else if (a == "--flv-players") {
    sc.o.flv_players = n;
  } else {
    sc.o.threads = n;
  }
  return {};
}

// -d, --ramp, --setup-timeout.
std::string set_seconds(Scanned& sc, const std::string& a, const std::string& v) {
  double d = 0;
  if (!to_double(v, d) || d <= 0) return a + ": expected a positive number, got '" + v + "'";
  if (a == "-d") {
    sc.o.duration_s = d;
  } else if (a == "--ramp") {
    sc.o.ramp = d;
  } else {
    sc.o.setup_timeout_s = d;
  }
  return {};
}

// Reads args[1..]; returns an error message, or "" when every argument was understood.
std::string scan(std::span<const std::string> args, Scanned& sc) {
  size_t i = 1;
  while (i < args.size()) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    const std::string v = has_value ? args[i + 1] : std::string();
    std::string err;
    if (a == "-c" || a == "--rtmp-players" || a == "--flv-players" || a == "--threads") {
      err = has_value ? set_count(sc, a, v) : a + " needs a value";
    } else if (a == "-d" || a == "--ramp" || a == "--setup-timeout") {
      err = has_value ? set_seconds(sc, a, v) : a + " needs a value";
    } else if (a == "-i" || a == "--audio" || a == "--publish" || a == "--flv-url" || a == "--track") {
      if (!has_value) return a + " needs a value";
      if (a == "-i")
        sc.o.input = v;
      else if (a == "--audio")
        sc.o.audio_input = v;
      else if (a == "--track")
        sc.o.track_inputs.push_back(v);
      else if (a == "--publish")
        sc.publish_url = v;
      else
        sc.flv_url = v;
    } else if (a == "--http10" || a == "--quiet") {
      if (a == "--http10")
        sc.o.http10 = true;
      else
        sc.o.progress = false;
      ++i;
      continue;
    } else if (!a.empty() && a[0] == '-') {
      return "unknown option '" + a + "'";
    } else {
      if (sc.positional) return "unexpected argument '" + a + "'";
      sc.positional = a;
      ++i;
      continue;
    }
    if (!err.empty()) return err;
    i += 2;
  }
  return {};
}

std::optional<Url> url_of(const std::string& text, const char* scheme, const char* what, std::string* err) {
  auto u = parse_url(text, err);
  if (!u) return std::nullopt;
  if (u->scheme != scheme) {
    *err = std::string(what) + " must be a " + scheme + ":// URL, got '" + text + "'";
    return std::nullopt;
  }
  return u;
}

std::string finish_fanout(Scanned& sc) {
  Options& o = sc.o;
  std::string err;
  if (sc.positional) return "fanout takes no positional URL (use --publish)";
  if (!sc.publish_url) return "fanout needs --publish RTMP_URL";
  auto u = url_of(*sc.publish_url, "rtmp", "--publish", &err);
  if (!u) return err;
  o.url = *u;
  if (o.input.empty()) return "fanout needs -i FILE.flv";
  if (sc.saw_c) return "fanout: use --rtmp-players / --flv-players instead of -c";
  if (sc.flv_url) {
    auto f = url_of(*sc.flv_url, "http", "--flv-url", &err);
    if (!f) return err;
    o.flv_url = *f;
  }
  if (o.flv_players > 0 && !o.flv_url) return "--flv-players needs --flv-url";
  if (o.rtmp_players + o.flv_players == 0) return "fanout needs --rtmp-players N and/or --flv-players M";
  o.connections = o.rtmp_players + o.flv_players;
  return {};
}

std::string finish_single(Scanned& sc) {
  Options& o = sc.o;
  std::string err;
  if (sc.publish_url || sc.flv_url || o.rtmp_players || o.flv_players) {
    return "--publish, --flv-url, --rtmp-players and --flv-players belong to fanout";
  }
  if (!sc.positional) return std::string(to_string(o.mode)) + " needs a URL";
  const char* scheme = (o.mode == Mode::RtmpPublish || o.mode == Mode::RtmpPlay) ? "rtmp" : "http";
  auto u = url_of(*sc.positional, scheme, "URL", &err);
  if (!u) return err;
  o.url = *u;
  if (o.connections < 1) return "-c must be at least 1";
  if (o.mode == Mode::RtmpPublish && o.input.empty()) return "rtmp-publish needs -i FILE.flv";
  if (o.mode != Mode::RtmpPublish && !o.track_inputs.empty()) return "--track is for rtmp-publish";
  if (o.mode != Mode::RtmpPublish && !o.input.empty()) return "-i is for rtmp-publish and fanout";
  if (o.http10 && o.mode != Mode::FlvPlay && o.mode != Mode::HlsPlay)
    return "--http10 is for flv-play and hls-play";
  return {};
}

}  // namespace

ParseResult parse_options(std::span<const std::string> args) {
  ParseResult res;
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      res.help = true;
      return res;
    }
  }
  if (args.empty()) {
    res.error = "missing MODE";
    return res;
  }
  Scanned sc;
  if (auto m = parse_mode(args[0])) {
    sc.o.mode = *m;
  } else {
    res.error = "unknown mode '" + args[0] + "'";
    return res;
  }
  std::string err = scan(args, sc);
  if (err.empty() && sc.o.threads < 1) err = "--threads must be at least 1";
  if (err.empty()) err = sc.o.mode == Mode::Fanout ? finish_fanout(sc) : finish_single(sc);
  if (err.empty() && !sc.o.audio_input.empty() && !is_ivf_path(sc.o.input))
    err = "--audio FILE.ogg goes with -i FILE.ivf";
  if (!err.empty()) {
    res.error = std::move(err);
    return res;
  }
  res.options = sc.o;
  return res;
}

}  // namespace rill::loadgen
