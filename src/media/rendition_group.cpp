#include "rill/media/rendition_group.h"

#include <charconv>

namespace rill::media {

std::optional<RenditionMember> rendition_member(std::string_view name,
                                                const std::vector<std::string>& suffixes) {
  std::optional<RenditionMember> best;
  size_t best_len = 0;
  for (size_t i = 0; i < suffixes.size(); ++i) {
    const std::string& s = suffixes[i];
    // The longest suffix wins: with _lo and _hi_lo, "a_hi_lo" is a rendition of "a".
    if (s.empty() || name.size() <= s.size() || !name.ends_with(s) || s.size() <= best_len) continue;
    best = RenditionMember{std::string(name.substr(0, name.size() - s.size())), i};
    best_len = s.size();
  }
  return best;
}

bool is_rendition(std::string_view name, const std::vector<std::string>& suffixes) {
  for (const std::string& s : suffixes) {
    if (!s.empty() && name.size() > s.size() && name.ends_with(s)) return true;
  }
  return false;
}

std::vector<std::string> rendition_names(std::string_view group, const std::vector<std::string>& suffixes) {
  std::vector<std::string> out;
  out.reserve(suffixes.size());
  for (const std::string& s : suffixes) out.push_back(std::string(group) + s);
  return out;
}

namespace {
constexpr std::string_view kTrackInfix = "_track";
}  // namespace

std::string track_rendition_name(std::string_view stream, uint8_t track) {
  return std::string(stream) + std::string(kTrackInfix) + std::to_string(track);
}

std::optional<TrackRendition> track_rendition_of(std::string_view name) {
  const size_t at = name.rfind(kTrackInfix);
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  const std::string_view digits = name.substr(at + kTrackInfix.size());
  unsigned id = 0;
  const char* end = digits.data() + digits.size();
  const auto [p, ec] = std::from_chars(digits.data(), end, id);
  if (digits.empty() || ec != std::errc() || p != end || id > 255 || (digits.size() > 1 && digits[0] == '0'))
    return std::nullopt;
  return TrackRendition{std::string(name.substr(0, at)), static_cast<uint8_t>(id)};
}

}  // namespace rill::media
