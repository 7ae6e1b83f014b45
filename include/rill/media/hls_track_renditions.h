#pragma once
// HlsTrackRenditions: the HLS renditions of an E-RTMP v2 multitrack publish (docs/abr.md,
// "Multitrack: HLS renditions"). Each video track is a rendition: track 0's media playlist is
// NAME_track0.m3u8 (the stream's HlsSegmenter, moved there when the first frame of another
// track came before its first segment), track N's is NAME_trackN.m3u8 (a segmenter of its own,
// here); every rendition carries track 0's audio. All are cut by the group's clock (the tracks of
// one publish share one clock: hls_segmenter.h, "aligned"), so the cut points and the media
// sequence numbers agree wherever the encoder aligned the tracks' keyframes. NAME.m3u8 becomes
// the multivariant playlist of the renditions (HlsStore::set_multivariant), rebuilt whenever one
// of them finished a segment.
//
// media/: no socket, no clock. One worker thread.
#include <spdlog/logger.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "rill/config/config.h"
#include "rill/media/media_frame.h"
#include "rill/media/stream_key.h"

namespace rill::media {

class HlsSegmenter;
class HlsStore;

class HlsTrackRenditions {
 public:
  // `group`: the stream (NAME). `track0`: the stream's own segmenter, already moved to
  // NAME_track0; it outlives this object (it owns it).
  HlsTrackRenditions(HlsStore& store, StreamKey group, const config::HlsConfig& cfg, spdlog::logger& log,
                     const HlsSegmenter& track0);
  ~HlsTrackRenditions();  // finish()
  HlsTrackRenditions(const HlsTrackRenditions&) = delete;
  HlsTrackRenditions& operator=(const HlsTrackRenditions&) = delete;

  // A re-framed video frame of track N > 0 (its segmenter is made at its first frame).
  void on_track_video(const MediaFrame& f);
  // Track 0's audio, which every rendition carries.
  void on_audio(const MediaFrame& f);
  // Renders NAME.m3u8 from the renditions' entries now (those with a segment, in track order).
  void refresh();
  // The publisher left: every track's playlist ends, and so does NAME's state.
  void finish();

  static constexpr const char* kAudioGroup = "audio";

 private:
  struct Track {
    uint8_t id = 0;
    std::unique_ptr<HlsSegmenter> segmenter;
    uint64_t segments = 0;  // as last seen (refresh when it changes)
  };
  Track& track(uint8_t id);
  // Every track's EXT-X-RENDITION-REPORT URIs: the other tracks known now.
  void report_renditions();

  HlsStore& store_;
  StreamKey group_;
  const config::HlsConfig& cfg_;
  spdlog::logger& log_;
  const HlsSegmenter& track0_;
  std::vector<Track> tracks_;  // by id
  bool finished_ = false;
};

}  // namespace rill::media
