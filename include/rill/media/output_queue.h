#pragma once
// OutputQueue: one subscriber's bounded queue of shared, already-serialized buffers, waiting for
// its socket. It knows no socket: the session fills an iovec array from it, writes with one
// writev, and reports how many bytes went out.
//
// Policy for slow consumers (the queue is measured in bytes and in media duration — the
// timestamp span between the oldest queued frame and the newest):
//  - past the soft bound: drop video frames (not sequence headers) until the next keyframe;
//    audio, data and control entries are kept (audio has priority, as in nginx-rtmp);
//  - past the hard bound: push() reports Overflow and the session disconnects the subscriber.
// A new queue starts by skipping video too: a player's first video frame must be a keyframe (with
// the GOP cache off, or past its bounds, live inter frames would otherwise come first; nginx-rtmp's
// `wait_key`). Those first skips are not counted as drops.
// The partially written head entry is never dropped (that would corrupt the byte stream).
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>

#include "rill/core/buffer.h"
#include "rill/media/media_frame.h"

namespace rill::media {

struct QueueLimits {
  size_t soft_bytes = 4 * 1024 * 1024;
  size_t hard_bytes = 16 * 1024 * 1024;
  uint32_t soft_duration_ms = 2000;
  uint32_t hard_duration_ms = 8000;
};

class OutputQueue {
 public:
  enum class PushResult { Queued, Dropped, Overflow };

  explicit OutputQueue(QueueLimits limits) : limits_(limits) {}

  // A media frame's serialized bytes (bytes = frame->rtmp_chunks(..) or frame->flv_tag(..)).
  PushResult push_frame(const MediaFrame& frame, BufferRef bytes);
  // Protocol bytes that must never be dropped (status messages, headers). Still counted.
  void push_control(BufferRef bytes);
  // While a new player receives the GOP cache (Subscriber::on_gop_replay): those frames are
  // queued whole and are not counted in duration_ms(), so a cache longer than soft_duration does
  // not make a fast late joiner look slow; the bounds apply from the first live frame on.
  void set_replay(bool on) { replay_ = on; }

  bool empty() const { return entries_.empty(); }
  size_t bytes() const { return bytes_; }  // unsent bytes
  uint32_t duration_ms() const;            // media time span of queued frames
  size_t frames_dropped() const { return dropped_; }
  bool skipping_video() const { return skipping_video_; }  // dropping video until a keyframe
  size_t entries() const { return entries_.size(); }

  // Fills up to max iovecs from the head (the first one offset by what was already sent).
  // Returns the count filled.
  size_t fill_iov(struct iovec* iov, size_t max) const;
  // `n` bytes were written: releases fully sent entries, advances the head offset.
  void consume(size_t n);
  // Hands every unsent byte range, in order, to sink(const BufferRef&, size_t offset, size_t len)
  // and empties the queue: for outputs that pass references on to another buffer layer
  // (evbuffer_add_reference) instead of writing to a socket themselves.
  template <typename F>
  void drain_to(F&& sink) {
    size_t off = head_offset_;
    for (const auto& e : entries_) {
      if (e.bytes.size() > off) sink(e.bytes, off, e.bytes.size() - off);
      off = 0;
    }
    consume(bytes_);
  }
  // Drops everything queued (the partially written head too: only for a connection that is
  // going away or restarting its byte stream). Video is then skipped until the next keyframe.
  void clear();

 private:
  struct Entry {
    BufferRef bytes;
    uint32_t timestamp;
    bool has_timestamp;  // false for control entries
  };
  void note_drop();
  bool over_soft() const;
  // Span from the oldest queued media timestamp to ts (or to newest_ts_ if later); wrap-safe.
  uint32_t span_to(uint32_t ts) const;
  void pop_head();
  void push_media_entry(BufferRef bytes, uint32_t ts);  // queued past the drop policy

  QueueLimits limits_;
  std::deque<Entry> entries_;
  size_t head_offset_ = 0;  // bytes of entries_.front() already written
  size_t bytes_ = 0;
  bool skipping_video_ = true;  // soft bound hit, or no keyframe yet: drop video until the next keyframe
  bool video_started_ = false;  // a video keyframe was queued: later skips are drops
  bool replay_ = false;          // set_replay(): GOP-cache frames, queued uncounted
  size_t dropped_ = 0;
  // Timestamps of the oldest and newest queued media frames, for duration_ms(). oldest_ts_ is
  // refreshed only when the media entry at the head is consumed (skipping the control entries
  // before the next media entry), so every operation is O(1) amortized.
  uint32_t newest_ts_ = 0;
  uint32_t oldest_ts_ = 0;
  size_t media_entries_ = 0;  // queued entries with a timestamp
};

}  // namespace rill::media
