// HlsStore and HlsStreamState: what a stream contributes as a rendition of a group
// (docs/abr.md): its multivariant playlist entry, its aligned first sequence number and, in
// HlsStreamState's constructor, its rendition reports.
#include <algorithm>
#include <cmath>

#include "rill/media/hls_store.h"
#include "rill/media/rendition_group.h"
#include "rill/protocol/hls_multivariant.h"

namespace rill::media {

std::vector<std::string> rendition_report_uris(const StreamKey& key, const config::HlsConfig& cfg) {
  std::vector<std::string> uris;
  const auto member = rendition_member(key.name, cfg.variant_suffixes);
  if (!member) return uris;
  // Relative to this playlist (/APP/NAME_hi.m3u8): its siblings are NAME_lo.m3u8 (RFC 8216bis
  // §4.4.5.4: "URI ... of the Media Playlist of the specified Rendition").
  for (const std::string& name : rendition_names(member->group, cfg.variant_suffixes)) {
    if (name != key.name) uris.push_back(name + ".m3u8");
  }
  return uris;
}

std::string HlsStreamState::variant_entry(const std::string& audio_group) const {
  protocol::HlsVariantStream v;
  double peak = 0, bits = 0, seconds = 0;
  for (size_t i = retired_; i < segments_.size(); ++i) {  // the listed ones
    const HlsSegment& s = segments_[i];
    if (s.duration_s <= 0) continue;
    const double b = 8.0 * static_cast<double>(s.data.size());
    peak = std::max(peak, b / s.duration_s);
    bits += b;
    seconds += s.duration_s;
  }
  if (seconds <= 0) return {};
  // §4.3.4.2: BANDWIDTH "the peak segment bit rate", AVERAGE-BANDWIDTH "the average segment bit
  // rate"; both over the segments listed now (a live stream has no other measure).
  v.bandwidth = static_cast<uint64_t>(std::ceil(peak));
  v.average_bandwidth = static_cast<uint64_t>(std::ceil(bits / seconds));
  v.uri = key_.name + ".m3u8";
  v.codecs = traits_.codecs;
  v.width = traits_.width;
  v.height = traits_.height;
  v.frame_rate = traits_.frame_rate;
  v.audio_group = audio_group;
  return protocol::render_variant_stream(v);
}

void HlsStore::set_traits(const StreamKey& key, HlsRenditionTraits traits) {
  if (HlsStreamState* st = find_mut(key)) st->traits_ = std::move(traits);
}

void HlsStore::set_multivariant(const StreamKey& key, const std::string& text) {
  HlsStreamState* st = find_mut(key);
  if (!st) return;
  st->multivariant_ = SharedBuffer::copy_of(std::string_view(text));
  // Recorded as held here, as a segment would (NAME has none): the other workers find NAME.m3u8
  // here also after the publisher left (workers/hls_sequence_memo.h).
  if (continuity_)
    continuity_->remember(st->key_text_, {st->playlist_.next_sequence(), st->playlist_.discontinuities_so_far()});
}

void HlsStore::set_rendition_reports(const StreamKey& key, std::vector<std::string> uris) {
  HlsStreamState* st = find_mut(key);
  if (!st) return;
  st->playlist_.set_rendition_reports(std::move(uris));
  st->playlist_cache_.reset();
}

void HlsStore::align_first_sequence(const StreamKey& key, uint64_t sequence) {
  HlsStreamState* st = find_mut(key);
  if (!st || st->has_segments() || !st->segments_.empty()) return;
  st->playlist_.start_at(sequence);
  st->playlist_cache_.reset();
}

}  // namespace rill::media
