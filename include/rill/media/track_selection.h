#pragma once
// TrackSelection: which tracks of a stream a player gets. A publisher may send E-RTMP v2
// multitrack tags (protocol/flv_multitrack.h); the stream then carries each tag three ways (see
// FrameView): as sent, and per track re-framed as a single-track tag. A plain single-track tag is
// track 0 (E-RTMP v2: "it is RECOMMENDED to use trackId set to zero" for the default track; OBS and
// ffmpeg send track 0 so, and only the other tracks as multitrack tags).
//
//  - all():    a player that declared multitrack support gets the tags as sent, byte-identical
//              (plain tags and multitrack tags), never a re-framed copy.
//  - one(N):   a player of one track gets that track as plain single-track tags: track 0's plain
//              tags and re-framed copies; for N > 0 the re-framed copies of track N only.
// Script data (metadata) goes to everyone.
#include <cstdint>
#include <optional>
#include <string_view>

#include "rill/media/media_frame.h"

namespace rill::media {

class TrackSelection {
 public:
  static constexpr TrackSelection all() { return TrackSelection(true, 0, 0); }
  static constexpr TrackSelection one(uint8_t track) { return TrackSelection(false, track, track); }
  // Track `track`'s video with `audio_track`'s audio (a rendition without audio of its own plays
  // with the stream's main audio, track 0: Stream::audio_track_for).
  static constexpr TrackSelection one(uint8_t track, uint8_t audio_track) {
    return TrackSelection(false, track, audio_track);
  }

  bool is_all() const { return all_; }
  uint8_t track() const { return track_; }  // for one(N)
  uint8_t audio_track() const { return audio_; }

  bool accepts(const MediaFrame& f) const {
    const uint8_t want = f.type == MediaType::Audio ? audio_ : track_;
    switch (f.view) {
      case FrameView::Plain:
        return all_ || want == 0 || f.type == MediaType::Data;
      case FrameView::Multitrack:
        return all_;
      case FrameView::Reframed:
        return !all_ && f.track == want;
    }
    return false;
  }
  bool operator==(const TrackSelection&) const = default;

 private:
  constexpr TrackSelection(bool all, uint8_t track, uint8_t audio)
      : all_(all), track_(track), audio_(audio) {}
  bool all_;
  uint8_t track_;
  uint8_t audio_;
};

// The value of a "track" query parameter: "all", or a track id 0..255. Nothing for anything else.
std::optional<TrackSelection> parse_track_selection(std::string_view value);

}  // namespace rill::media
