#pragma once
// GopCache: what a new subscriber needs to start at once — the latest metadata, the video and
// audio sequence headers, and every frame since the last video keyframe. Bounded by bytes and
// frames: past either bound the cached GOP is dropped until the next keyframe (a new player then
// waits for that keyframe, as with no cache).
//
// Multitrack publishes (track_selection.h): every view of a frame is cached (as sent, and each
// track re-framed); track 0 (plain tags, or re-framed track 0) drives the keyframe logic as for a
// single-track stream, and each track keeps its own sequence headers. A new player's replay is
// filtered by its TrackSelection (Stream::add_subscriber).
#include <cstddef>
#include <deque>
#include <functional>
#include <vector>

#include "rill/media/media_frame.h"

namespace rill::media {

class GopCache {
 public:
  GopCache(bool enabled, size_t max_bytes, size_t max_frames);

  // Every published frame passes through here (sequence headers and metadata are remembered
  // even when the GOP part is disabled).
  void add(const FramePtr& frame);
  // Forget everything — GOP, metadata and sequence headers (a new publisher starts and sends its
  // own; nothing stale is kept).
  void clear();
  // Replays, in order: metadata, video sequence header, audio sequence header, the other tracks'
  // headers, then the GOP (every view: the caller filters).
  void replay(const std::function<void(const FramePtr&)>& sink) const;

  size_t gop_frames() const { return gop_.size(); }
  const std::deque<FramePtr>& gop() const { return gop_; }  // the cached frames, oldest first
  size_t gop_bytes() const { return gop_bytes_; }
  const FramePtr& metadata() const { return metadata_; }
  const FramePtr& video_header() const { return video_header_; }
  const FramePtr& audio_header() const { return audio_header_; }
  // Sequence headers of multitrack publishes other than track 0's: multitrack tags as sent and
  // re-framed tracks 1.., the latest per (type, view, track).
  const std::vector<FramePtr>& track_headers() const { return track_headers_; }

  // Track 0 of the stream: a plain (single-track) tag or re-framed track 0. What the GOP starts
  // at, what video_header()/audio_header() hold and what outputs (HLS, recording) get.
  static bool is_track0(const MediaFrame& f) {
    return f.view == FrameView::Plain || (f.view == FrameView::Reframed && f.track == 0);
  }

 private:
  bool enabled_;
  size_t max_bytes_;
  size_t max_frames_;
  FramePtr metadata_, video_header_, audio_header_;
  std::vector<FramePtr> track_headers_;
  // Starts with a video keyframe, or is empty. Exception: a stream that has shown no video at
  // all (audio only) keeps a sliding window of its latest audio frames instead (at most
  // kAudioOnlyWindowFrames frames spanning at most kAudioOnlyWindowMs), so a player starts at once.
  std::deque<FramePtr> gop_;
  size_t gop_bytes_ = 0;
  bool overflowed_ = false;  // bound hit: cache nothing until the next keyframe
  bool seen_video_ = false;  // any video (header or frame) since the last clear()

 public:
  static constexpr size_t kAudioOnlyWindowFrames = 50;
  static constexpr uint32_t kAudioOnlyWindowMs = 1000;

 private:
  void drop_gop();
  void push(const FramePtr& frame);  // onto the GOP
  void keep_track_header(const FramePtr& frame);
};

}  // namespace rill::media
