#include "rill/media/rendition_group.h"

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

}  // namespace rill::media
