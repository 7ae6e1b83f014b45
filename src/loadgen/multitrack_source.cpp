#include "multitrack_source.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "rill/protocol/error.h"
#include "rill/protocol/flv_multitrack.h"
#include "rill/protocol/flv_tag.h"

namespace rill::loadgen {

using namespace rill::protocol;

namespace {

std::vector<SourceTag> video_tags(const std::vector<SourceTag>& tags) {
  std::vector<SourceTag> out;
  for (const SourceTag& t : tags)
    if (t.type == kFlvTagVideo) out.push_back(t);
  return out;
}

// One ManyTracks tag of the n-th video tag of every file (track i = file i).
BufferRef combine(const std::vector<std::vector<SourceTag>>& videos, size_t n) {
  std::vector<SingleTrackParts> parts;
  MultitrackTag tag;
  tag.is_video = true;
  tag.type = AvMultitrackType::ManyTracks;
  for (size_t i = 0; i < videos.size(); ++i) {
    parts.push_back(single_track_parts(videos[i][n].body.span(), true));
    if (parts[i].packet_type != parts[0].packet_type || parts[i].track.fourcc != parts[0].track.fourcc) {
      throw ProtocolError("video tag " + std::to_string(n) + " of track " + std::to_string(i) + " is " +
                          fourcc_to_string(parts[i].track.fourcc) + " packet type " +
                          std::to_string(parts[i].packet_type) + ", track 0's is " +
                          fourcc_to_string(parts[0].track.fourcc) + " packet type " +
                          std::to_string(parts[0].packet_type));
    }
    parts[i].track.track_id = static_cast<uint8_t>(i);
    tag.tracks.push_back(parts[i].track);
  }
  tag.frame_type = parts[0].frame_type;  // one frame type for all: the files share their GOP
  tag.packet_type = parts[0].packet_type;
  return SharedBuffer::copy_of(std::span<const uint8_t>(write_multitrack_tag(tag)));
}

}  // namespace

std::shared_ptr<const FlvSource> multitrack_from_tags(const std::vector<std::vector<SourceTag>>& files) {
  if (files.empty()) throw std::runtime_error("multitrack: no track");
  std::vector<std::vector<SourceTag>> videos;
  size_t count = SIZE_MAX;
  for (const auto& f : files) {
    videos.push_back(video_tags(f));
    count = std::min(count, videos.back().size());
  }
  std::vector<SourceTag> out;
  size_t n = 0;
  for (const SourceTag& t : files[0]) {
    if (t.type != kFlvTagVideo) {
      out.push_back(t);
      continue;
    }
    if (n == count) break;
    SourceTag m = t;
    m.body = combine(videos, n++);
    out.push_back(std::move(m));
  }
  return FlvSource::from_tags(std::move(out));
}

std::shared_ptr<const FlvSource> load_multitrack(const std::vector<std::string>& paths) {
  std::vector<std::vector<SourceTag>> files;
  for (const std::string& p : paths) files.push_back(FlvSource::read_tags(p));
  try {
    return multitrack_from_tags(files);
  } catch (const ProtocolError& e) {
    throw std::runtime_error("multitrack " + paths.front() + " ...: " + e.what());
  }
}

}  // namespace rill::loadgen
