#include "bench_options.h"

#include <charconv>
#include <cmath>

namespace rill::bench {

const char* to_string(Mode m) {
  switch (m) {
    case Mode::RtmpPublish: return "rtmp-publish";
    case Mode::RtmpPlay: return "rtmp-play";
    case Mode::FlvPlay: return "flv-play";
    case Mode::HlsPlay: return "hls-play";
    case Mode::Fanout: return "fanout";
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
  -i FILE.flv        media to publish (looped, timestamps keep increasing)
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

ParseResult parse_options(std::span<const std::string> args) {
  ParseResult res;
  auto fail = [&](std::string why) {
    res.options.reset();
    res.error = std::move(why);
    return res;
  };
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      res.help = true;
      return res;
    }
  }
  if (args.empty()) return fail("missing MODE");
  Options o;
  const std::string& mode = args[0];
  if (mode == "rtmp-publish") o.mode = Mode::RtmpPublish;
  else if (mode == "rtmp-play") o.mode = Mode::RtmpPlay;
  else if (mode == "flv-play") o.mode = Mode::FlvPlay;
  else if (mode == "hls-play") o.mode = Mode::HlsPlay;
  else if (mode == "fanout") o.mode = Mode::Fanout;
  else return fail("unknown mode '" + mode + "'");

  size_t i = 1;
  std::optional<std::string> positional;
  std::optional<std::string> publish_url, flv_url;
  bool saw_c = false;
  while (i < args.size()) {
    const std::string& a = args[i];
    auto value = [&](std::string& out) -> bool {
      if (i + 1 >= args.size()) return false;
      out = args[i + 1];
      i += 2;
      return true;
    };
    std::string v;
    if (a == "-c" || a == "--rtmp-players" || a == "--flv-players" || a == "--threads") {
      if (!value(v)) return fail(a + " needs a value");
      int n = 0;
      if (!to_int(v, n) || n < 0) return fail(a + ": expected a non-negative integer, got '" + v + "'");
      if (a == "-c") {
        o.connections = n;
        saw_c = true;
      } else if (a == "--rtmp-players") {
        o.rtmp_players = n;
      } else if (a == "--flv-players") {
        o.flv_players = n;
      } else {
        o.threads = n;
      }
    } else if (a == "-d" || a == "--ramp" || a == "--setup-timeout") {
      if (!value(v)) return fail(a + " needs a value");
      double d = 0;
      if (!to_double(v, d) || d <= 0) return fail(a + ": expected a positive number, got '" + v + "'");
      if (a == "-d") o.duration_s = d;
      else if (a == "--ramp") o.ramp = d;
      else o.setup_timeout_s = d;
    } else if (a == "-i") {
      if (!value(o.input)) return fail("-i needs a value");
    } else if (a == "--publish") {
      if (!value(v)) return fail("--publish needs a value");
      publish_url = v;
    } else if (a == "--flv-url") {
      if (!value(v)) return fail("--flv-url needs a value");
      flv_url = v;
    } else if (a == "--http10") {
      o.http10 = true;
      ++i;
    } else if (a == "--quiet") {
      o.progress = false;
      ++i;
    } else if (!a.empty() && a[0] == '-') {
      return fail("unknown option '" + a + "'");
    } else {
      if (positional) return fail("unexpected argument '" + a + "'");
      positional = a;
      ++i;
    }
  }
  if (o.threads < 1) return fail("--threads must be at least 1");

  std::string err;
  auto url_of = [&](const std::string& text, const char* scheme, const char* what) -> std::optional<Url> {
    auto u = parse_url(text, &err);
    if (!u) return std::nullopt;
    if (u->scheme != scheme) {
      err = std::string(what) + " must be a " + scheme + ":// URL, got '" + text + "'";
      return std::nullopt;
    }
    return u;
  };

  if (o.mode == Mode::Fanout) {
    if (positional) return fail("fanout takes no positional URL (use --publish)");
    if (!publish_url) return fail("fanout needs --publish RTMP_URL");
    auto u = url_of(*publish_url, "rtmp", "--publish");
    if (!u) return fail(err);
    o.url = *u;
    if (o.input.empty()) return fail("fanout needs -i FILE.flv");
    if (saw_c) return fail("fanout: use --rtmp-players / --flv-players instead of -c");
    if (flv_url) {
      auto f = url_of(*flv_url, "http", "--flv-url");
      if (!f) return fail(err);
      o.flv_url = *f;
    }
    if (o.flv_players > 0 && !o.flv_url) return fail("--flv-players needs --flv-url");
    if (o.rtmp_players + o.flv_players == 0) return fail("fanout needs --rtmp-players N and/or --flv-players M");
    o.connections = o.rtmp_players + o.flv_players;
    res.options = o;
    return res;
  }
  if (publish_url || flv_url || o.rtmp_players || o.flv_players) {
    return fail("--publish, --flv-url, --rtmp-players and --flv-players belong to fanout");
  }
  if (!positional) return fail(std::string(to_string(o.mode)) + " needs a URL");
  const char* scheme = (o.mode == Mode::RtmpPublish || o.mode == Mode::RtmpPlay) ? "rtmp" : "http";
  auto u = url_of(*positional, scheme, "URL");
  if (!u) return fail(err);
  o.url = *u;
  if (o.connections < 1) return fail("-c must be at least 1");
  if (o.mode == Mode::RtmpPublish && o.input.empty()) return fail("rtmp-publish needs -i FILE.flv");
  if (o.mode != Mode::RtmpPublish && !o.input.empty()) return fail("-i is for rtmp-publish and fanout");
  if (o.http10 && o.mode != Mode::FlvPlay && o.mode != Mode::HlsPlay) return fail("--http10 is for flv-play and hls-play");
  res.options = o;
  return res;
}

}  // namespace rill::bench
