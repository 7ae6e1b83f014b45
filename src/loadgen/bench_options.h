#pragma once
// rill-bench command line. The shape is fixed (scripts rely on it):
//   rill-bench MODE URL [options]
//   rill-bench fanout --publish RTMP_URL -i FILE.flv --rtmp-players N [--flv-url URL --flv-players M]
// Parsing is pure (no I/O) so the unit tests can drive it.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "url.h"

namespace rill::loadgen {

enum class Mode { RtmpPublish, RtmpPlay, FlvPlay, HlsPlay, Fanout };
const char* to_string(Mode m);

struct Options {
  Mode mode = Mode::RtmpPlay;
  Url url;                      // the positional URL; fanout: the --publish URL
  int connections = 1;          // -c
  double duration_s = 10;       // -d: bounds every run
  std::string input;            // -i FILE.flv (FILE.h265, FILE.ivf)
  std::string audio_input;      // --audio FILE.ogg: Opus with an AV1 FILE.ivf
  std::vector<std::string> track_inputs;  // --track FILE.flv (repeated): tracks 1.. of a multitrack publish
  double ramp = 200;            // --ramp: new connections per second (per run, all threads)
  int threads = 1;              // --threads
  bool http10 = false;          // --http10: HTTP/1.0 requests, close-delimited bodies
  double setup_timeout_s = 10;  // --setup-timeout: connect to playing/publishing, else "failed"
  bool progress = true;         // --quiet turns the per-second stderr line off
  // fanout
  int rtmp_players = 0;        // --rtmp-players
  std::optional<Url> flv_url;  // --flv-url
  int flv_players = 0;         // --flv-players
};

struct ParseResult {
  std::optional<Options> options;
  std::string error;  // set when options is empty and help is false
  bool help = false;  // -h / --help
};

// args: argv[1..].
ParseResult parse_options(std::span<const std::string> args);
std::string usage();

}  // namespace rill::loadgen
