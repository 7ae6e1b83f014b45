#include "rill/media/gop_cache.h"

namespace rill::media {

GopCache::GopCache(bool enabled, size_t max_bytes, size_t max_frames)
    : enabled_(enabled), max_bytes_(max_bytes), max_frames_(max_frames) {}

void GopCache::drop_gop() {
  // A GOP is freed a GOP after its first frame came: with many streams on a worker its frames and
  // their payloads' headers have left the cache, and freeing one takes two misses in a row (the
  // frame's count, then its payload's). Fetched ahead, the misses of several frames overlap.
  constexpr size_t kAhead = 8;
  const size_t n = gop_.size();
  auto fetch_frame = [&](size_t i) {
    const auto* f = reinterpret_cast<const char*>(gop_[i].get());
    __builtin_prefetch(f - 16, 1);  // the control block's counts, just before the frame
    __builtin_prefetch(f + sizeof(MediaFrame) - 1, 1);
  };
  for (size_t i = 0; i < n && i < 2 * kAhead; ++i) fetch_frame(i);
  for (size_t i = 0; i < n; ++i) {
    if (i + 2 * kAhead < n) fetch_frame(i + 2 * kAhead);
    if (i + kAhead < n) __builtin_prefetch(gop_[i + kAhead]->payload.get(), 1);
    gop_[i].reset();
  }
  gop_.clear();
  gop_bytes_ = 0;
}

void GopCache::push(const FramePtr& frame) {
  // Counted here and moved in: a copy-construction in place reads the count's address back from
  // the slot it has just written, which waits on that cold line of the deque (most of add()'s time).
  FramePtr held = frame;
  gop_.push_back(std::move(held));
}

void GopCache::clear() {
  metadata_.reset();
  video_header_.reset();
  audio_header_.reset();
  track_headers_.clear();
  drop_gop();
  overflowed_ = false;
  seen_video_ = false;
}

void GopCache::add(const FramePtr& frame) {
  if (!frame) return;
  const MediaFrame& f = *frame;

  if (f.type == MediaType::Video && !seen_video_) {
    // First video of this publisher: whatever the audio-only window holds does not start with a
    // keyframe, so it cannot lead a GOP.
    seen_video_ = true;
    drop_gop();
  }

  if (f.metadata) {
    metadata_ = frame;
    return;
  }
  if (f.sequence_header) {
    if (!is_track0(f))
      keep_track_header(frame);
    else if (f.type == MediaType::Video)
      video_header_ = frame;
    else if (f.type == MediaType::Audio)
      audio_header_ = frame;
    return;
  }
  if (f.type == MediaType::Data || !enabled_) return;

  if (f.type == MediaType::Video) {
    if (f.keyframe && is_track0(f)) {
      drop_gop();
      overflowed_ = false;
    } else if (gop_.empty() || overflowed_) {
      return;  // no open GOP: an inter frame is useless to a new player
    }
  } else if (seen_video_) {  // audio in an audio+video stream
    if (gop_.empty() || overflowed_) return;
  } else {  // audio-only stream: sliding window
    push(frame);
    gop_bytes_ += f.payload.size();
    while (gop_.size() > 1 &&
           (gop_.size() > kAudioOnlyWindowFrames || gop_bytes_ > max_bytes_ || gop_.size() > max_frames_ ||
            static_cast<int32_t>(f.timestamp - gop_.front()->timestamp) > static_cast<int32_t>(kAudioOnlyWindowMs))) {
      gop_bytes_ -= gop_.front()->payload.size();
      gop_.pop_front();
    }
    if (gop_bytes_ > max_bytes_ || gop_.size() > max_frames_) drop_gop();
    return;
  }

  push(frame);
  gop_bytes_ += f.payload.size();
  if (gop_bytes_ > max_bytes_ || gop_.size() > max_frames_) {
    drop_gop();
    overflowed_ = true;
  }
}

void GopCache::keep_track_header(const FramePtr& frame) {
  for (FramePtr& h : track_headers_) {
    if (h->type == frame->type && h->view == frame->view && h->track == frame->track) {
      h = frame;
      return;
    }
  }
  track_headers_.push_back(frame);
}

void GopCache::replay(const std::function<void(const FramePtr&)>& sink) const {
  if (metadata_) sink(metadata_);
  if (video_header_) sink(video_header_);
  if (audio_header_) sink(audio_header_);
  for (size_t i = 0; i < track_headers_.size(); ++i) sink(track_headers_[i]);
  // Indexed: stays well-defined even if the sink ends up adding to or clearing this cache.
  for (size_t i = 0; i < gop_.size(); ++i) {
    FramePtr f = gop_[i];
    sink(f);
  }
}

}  // namespace rill::media
