// Fuzz target: E-RTMP v2 multitrack tags (parse, re-frame one track, write back).
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "rill/protocol/flv_multitrack.h"

using namespace rill::protocol;

namespace {

bool inside(std::span<const uint8_t> part, std::span<const uint8_t> whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

void check(std::span<const uint8_t> in, bool video) {
  MultitrackTag tag;
  try {
    tag = video ? parse_multitrack_video(in) : parse_multitrack_audio(in);
  } catch (const ProtocolError&) {
    return;
  }
  if (tag.tracks.empty()) std::abort();
  if (tag.type == AvMultitrackType::OneTrack && tag.tracks.size() != 1) std::abort();
  for (const TrackPayload& t : tag.tracks) {
    if (!inside(t.body, in)) std::abort();
    try {
      const std::vector<uint8_t> single = single_track_tag(tag, t);
      if (single.size() < t.body.size()) std::abort();
    } catch (const ProtocolError&) {
    }
  }
  // What was parsed writes back to a tag that parses to the same tracks.
  const std::vector<uint8_t> wire = write_multitrack_tag(tag);
  const MultitrackTag back = video ? parse_multitrack_video(wire) : parse_multitrack_audio(wire);
  if (back.tracks.size() != tag.tracks.size() || back.packet_type != tag.packet_type) std::abort();
  for (size_t i = 0; i < back.tracks.size(); ++i) {
    const TrackPayload &a = tag.tracks[i], &b = back.tracks[i];
    if (a.track_id != b.track_id || a.fourcc != b.fourcc || a.body.size() != b.body.size()) std::abort();
    for (size_t j = 0; j < a.body.size(); ++j)
      if (a.body[j] != b.body[j]) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  check(in, true);
  check(in, false);
  return 0;
}
