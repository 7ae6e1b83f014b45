#include "rill/media/hls_track_renditions.h"

#include <algorithm>
#include <string>

#include "rill/media/hls_segmenter.h"
#include "rill/media/hls_store.h"
#include "rill/media/rendition_group.h"
#include "rill/protocol/hls_multivariant.h"

namespace rill::media {

HlsTrackRenditions::HlsTrackRenditions(HlsStore& store, StreamKey group, const config::HlsConfig& cfg,
                                       spdlog::logger& log, const HlsSegmenter& track0)
    : store_(store), group_(std::move(group)), cfg_(cfg), log_(log), track0_(track0) {}

HlsTrackRenditions::~HlsTrackRenditions() { finish(); }

HlsTrackRenditions::Track& HlsTrackRenditions::track(uint8_t id) {
  auto it = std::lower_bound(tracks_.begin(), tracks_.end(), id,
                             [](const Track& t, uint8_t v) { return t.id < v; });
  if (it != tracks_.end() && it->id == id) return *it;
  Track t;
  t.id = id;
  t.segmenter = std::make_unique<HlsSegmenter>(
      store_, StreamKey{group_.app, track_rendition_name(group_.name, id)}, cfg_, log_, /*group_clock=*/true);
  t.segmenter->share_audio_config(track0_);  // its header came before this track's first frame
  core::StreamLog{log_, group_.str()}.info("hls: {}: video track {} is the rendition {}.m3u8", group_.str(),
                                           id, track_rendition_name(group_.name, id));
  Track& added = *tracks_.insert(it, std::move(t));
  report_renditions();
  return added;
}

void HlsTrackRenditions::report_renditions() {
  // LL-HLS (RFC 8216bis §4.4.5.4): each track's playlist reports every other track's, relative
  // to it (NAME_track1.m3u8 next to NAME_track0.m3u8).
  std::vector<uint8_t> ids{0};
  for (const Track& t : tracks_) ids.push_back(t.id);
  for (uint8_t id : ids) {
    std::vector<std::string> uris;
    for (uint8_t other : ids) {
      if (other != id) uris.push_back(track_rendition_name(group_.name, other) + ".m3u8");
    }
    store_.set_rendition_reports(StreamKey{group_.app, track_rendition_name(group_.name, id)},
                                 std::move(uris));
  }
}

void HlsTrackRenditions::on_track_video(const MediaFrame& f) {
  if (finished_) return;
  Track& t = track(f.track);
  t.segmenter->on_frame(f);
  const uint64_t n = t.segmenter->stats().segments;
  if (n != t.segments) {
    t.segments = n;
    refresh();
  }
}

void HlsTrackRenditions::on_audio(const MediaFrame& f) {
  if (finished_) return;
  for (Track& t : tracks_) t.segmenter->on_frame(f);
}

void HlsTrackRenditions::refresh() {
  // The renditions carry track 0's audio: one shared audio rendition, muxed in each variant
  // (RFC 8216 §4.3.4.1: "If the URI attribute is missing, the media data for this Rendition is
  // included in the Media Playlist of any EXT-X-STREAM-INF tag referencing this EXT-X-MEDIA tag").
  const bool audio = track0_.carries_audio();
  const std::string audio_group = audio ? kAudioGroup : "";
  std::vector<std::string> entries;
  auto add = [&](uint8_t id) {
    const HlsStreamState* st = store_.find(StreamKey{group_.app, track_rendition_name(group_.name, id)});
    std::string e = st ? st->variant_entry(audio_group) : std::string();
    if (!e.empty()) entries.push_back(std::move(e));
  };
  add(0);
  for (const Track& t : tracks_) add(t.id);
  if (entries.empty()) return;
  std::vector<std::string> media;
  if (audio) {
    protocol::HlsAudioRendition a;
    a.group_id = kAudioGroup;
    a.name = "track 0";
    a.is_default = true;
    a.autoselect = true;
    media.push_back(protocol::render_audio_rendition(a));
  }
  store_.set_multivariant(group_, protocol::assemble_multivariant_playlist(media, entries));
}

void HlsTrackRenditions::finish() {
  if (finished_) return;
  for (Track& t : tracks_) t.segmenter->finish();  // the last segments
  refresh();
  finished_ = true;
  store_.close(group_);
}

}  // namespace rill::media
