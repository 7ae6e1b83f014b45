#pragma once
// rill-bench: a multitrack publish made of several FLV files, one per track (e.g. renditions of
// one source at several sizes, encoded with the same GOP). Every video tag of the first file is
// sent as an E-RTMP v2 ManyTracks tag (protocol/flv_multitrack.h) holding the n-th video tag of
// each file as tracks 0, 1, ...; the first file's audio and metadata go as they are (track 0).
#include <memory>
#include <string>
#include <vector>

#include "flv_source.h"

namespace rill::loadgen {

// Throws std::runtime_error naming the file when a file does not load or its video tags cannot
// be tracks of one ManyTracks tag with the first file's (another codec or packet type). The
// files' video tags are paired by position; the source ends with the shortest file's video.
std::shared_ptr<const FlvSource> load_multitrack(const std::vector<std::string>& paths);

// The same from tags in memory (tests): one tag list per track, in file order.
std::shared_ptr<const FlvSource> multitrack_from_tags(const std::vector<std::vector<SourceTag>>& files);

}  // namespace rill::loadgen
