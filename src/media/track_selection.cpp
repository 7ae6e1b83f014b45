#include "rill/media/track_selection.h"

#include <charconv>

namespace rill::media {

std::optional<TrackSelection> parse_track_selection(std::string_view value) {
  if (value == "all") return TrackSelection::all();
  unsigned id = 0;
  const char* end = value.data() + value.size();
  const auto [p, ec] = std::from_chars(value.data(), end, id);
  if (value.empty() || ec != std::errc() || p != end || id > 255) return std::nullopt;
  return TrackSelection::one(static_cast<uint8_t>(id));
}

}  // namespace rill::media
