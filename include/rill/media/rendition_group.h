#pragma once
// Rendition groups by name suffix (hls.variants, docs/abr.md): with suffixes _hi, _mid, _lo the
// streams NAME_hi, NAME_mid and NAME_lo of an app are the renditions of the group NAME, whose
// NAME.m3u8 is a multivariant playlist. The one place that says which name belongs to which
// group: the HLS route, the token check, the segmenter's alignment and the rendition reports ask
// it. Pure names; no socket, no clock.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rill::media {

struct RenditionMember {
  std::string group;  // NAME
  size_t index = 0;   // of its suffix in the configured list
};

// The group `name` is a rendition of: its longest matching suffix with something before it
// ("_hi" alone is no member); nothing when none matches.
std::optional<RenditionMember> rendition_member(std::string_view name,
                                                const std::vector<std::string>& suffixes);

// Whether `name` is a rendition of some group: rendition_member without making the group's name
// (asked on every playlist request of an app with variants).
bool is_rendition(std::string_view name, const std::vector<std::string>& suffixes);

// The stream names of the group's renditions, in the configured order.
std::vector<std::string> rendition_names(std::string_view group, const std::vector<std::string>& suffixes);

// The renditions of a multitrack publish NAME (E-RTMP v2 video tracks): NAME_track0,
// NAME_track1, ... (docs/abr.md, "Multitrack: HLS renditions").
std::string track_rendition_name(std::string_view stream, uint8_t track);
struct TrackRendition {
  std::string stream;  // NAME
  uint8_t track = 0;
};
// NAME and N of "NAME_trackN" (N a track id 0-255 without leading zeros, NAME not empty).
std::optional<TrackRendition> track_rendition_of(std::string_view name);

}  // namespace rill::media
