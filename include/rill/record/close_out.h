#pragma once
// Close-out of leftover recording files: a file no writer holds (record::FileWriter's flock) was
// closed, or was being written by a process that died. Such a file is made what a closed file
// would be:
//   - a trailing partial fMP4 fragment or FLV tag is cut off (ftruncate), so the file ends at a
//     whole unit (protocol/recording_index.h says where);
//   - an FLV whose onMetaData says duration 0 (never closed) gets its onMetaData rewritten in
//     place with duration, filesize and the keyframe index, by replaying its tags through
//     protocol::FlvFileWriter (the recorder's own metadata code);
//   - a file with nothing playable (no fragment, no audio or video frame) is removed.
// A file that is not a recording (a plain MP4, another format) is left alone. The file's mtime is
// kept: the catalog takes a recording's start from it (mtime minus duration).
#include <ctime>
#include <string>
#include <vector>

#include "rill/record/recording_files.h"

namespace spdlog {
class logger;
}

namespace rill::record {

enum class CloseOutAction : uint8_t {
  Complete,       // nothing to do
  Fixed,          // cut, or its onMetaData rewritten, or both
  Removed,        // nothing playable
  BeingWritten,   // locked: left alone
  NotARecording,  // left alone
  Failed,         // could not be read or changed: left as it is
};

struct CloseOutResult {
  CloseOutAction action = CloseOutAction::Complete;
  std::string detail;  // what was done or why not, for the log line
};

CloseOutResult close_out_file(const std::string& path);

// Closes out every unlocked file of each root whose mtime is at or after `modified_since` (0:
// every file); one log line per file fixed or removed, or that failed.
void close_out_recordings(const std::vector<RecordingRoot>& roots, std::time_t modified_since,
                          spdlog::logger& log);

}  // namespace rill::record
