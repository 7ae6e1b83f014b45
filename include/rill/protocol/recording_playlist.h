#pragma once
// The VOD media playlist of a stream's fMP4 recordings (RFC 8216): fragments in, text out. No
// remuxing: every segment is a byte range of a recording file, the init part its EXT-X-MAP.
//
//   #EXT-X-VERSION:7               EXT-X-MAP in a media playlist without I-frames needs 6 (§7)
//   #EXT-X-TARGETDURATION:N        every EXTINF rounded to the nearest integer is <= N (§4.3.3.1)
//   #EXT-X-PLAYLIST-TYPE:VOD       the playlist never changes (§4.3.3.5)
//   #EXT-X-INDEPENDENT-SEGMENTS    each segment starts at a video keyframe (§4.3.5.1)
//   per file: #EXT-X-DISCONTINUITY before all but the first (§4.3.2.3: a new file, a new init
//   part and timeline), #EXT-X-MAP:URI="...",BYTERANGE="len@0" (§4.3.2.5),
//   #EXT-X-PROGRAM-DATE-TIME of its first segment (§4.3.2.6); per segment #EXTINF (§4.3.2.1) and
//   #EXT-X-BYTERANGE:len@offset (§4.3.2.2) into the file's URI; #EXT-X-ENDLIST (§4.3.3.4).
//
// A segment is one or more consecutive fragments starting at one that starts with a video
// keyframe (Fmp4Fragment::keyframe; every fragment of a file without video): fragments are
// added while the segment stays within the target duration, and a fragment that does not start
// with a keyframe is always added to the segment before it. Fragments of a file before its first
// keyframe are left out (nothing decodes them). Only segments that overlap [from, to] are listed.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rill/protocol/recording_index.h"

namespace rill::protocol {

struct RecordingPlaylistFile {
  std::string uri;         // of the file, with the query the player must carry (a token)
  double start = 0;        // Unix seconds of its first fragment
  uint64_t init_size = 0;  // ftyp + moov, at offset 0
  std::vector<Fmp4Fragment> fragments;
};

struct RecordingPlaylistOptions {
  double segment_seconds = 2;      // the app's HLS segment duration
  std::optional<double> from, to;  // Unix seconds; none: the whole archive
};

// "" when no segment is in range.
std::string recording_vod_playlist(const std::vector<RecordingPlaylistFile>& files,
                                   const RecordingPlaylistOptions& options);

}  // namespace rill::protocol
