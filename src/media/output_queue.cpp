#include "rill/media/output_queue.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace rill::media {

namespace {
// a is later than b on a 32-bit wrapping timeline.
bool later(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) > 0; }
}  // namespace

void OutputQueue::note_drop() { ++dropped_; }

uint32_t OutputQueue::span_to(uint32_t ts) const {
  if (media_entries_ == 0) return 0;
  const uint32_t newest = later(ts, newest_ts_) ? ts : newest_ts_;
  const int32_t d = static_cast<int32_t>(newest - oldest_ts_);
  return d > 0 ? static_cast<uint32_t>(d) : 0;
}

uint32_t OutputQueue::duration_ms() const { return span_to(newest_ts_); }

bool OutputQueue::over_soft() const {
  return bytes_ > limits_.soft_bytes || duration_ms() > limits_.soft_duration_ms;
}

OutputQueue::PushResult OutputQueue::push_frame(const MediaFrame& frame, BufferRef bytes) {
  if (frame.sequence_header || frame.metadata) {
    // Configuration, not media time: a late joiner's replayed headers carry the timestamp of when
    // they were published, which must not count as queued duration. Never dropped.
    push_control(std::move(bytes));
    return PushResult::Queued;
  }
  const uint32_t ts = frame.timestamp;
  if (replay_) {
    // The replay starts at a keyframe: live video may follow it without waiting for the next.
    if (frame.type == MediaType::Video && frame.keyframe) {
      skipping_video_ = false;
      video_started_ = true;
    }
    bytes_ += bytes.size();
    entries_.push_back(Entry{std::move(bytes), ts, false});
    return PushResult::Queued;
  }
  // Hard bound by duration applies to every frame, dropped ones included: a consumer that makes
  // no progress at all is disconnected even when everything it is offered gets skipped.
  if (span_to(ts) > limits_.hard_duration_ms) return PushResult::Overflow;

  if (frame.type == MediaType::Video && !frame.sequence_header) {
    const bool soft = over_soft();
    if (soft) skipping_video_ = true;
    if (skipping_video_) {
      if (frame.keyframe && !soft) {
        skipping_video_ = false;
        video_started_ = true;
      } else {
        if (video_started_) note_drop();
        return PushResult::Dropped;
      }
    }
  }

  // A frame larger than the whole hard bound is still accepted into an empty queue.
  if (bytes_ > 0 && bytes_ + bytes.size() > limits_.hard_bytes) return PushResult::Overflow;

  push_media_entry(std::move(bytes), ts);
  if (over_soft()) skipping_video_ = true;
  return PushResult::Queued;
}

void OutputQueue::push_media_entry(BufferRef bytes, uint32_t ts) {
  bytes_ += bytes.size();
  entries_.push_back(Entry{std::move(bytes), ts, true});
  if (media_entries_ == 0) {
    oldest_ts_ = newest_ts_ = ts;
  } else if (later(ts, newest_ts_)) {
    newest_ts_ = ts;
  }
  ++media_entries_;
}

void OutputQueue::push_control(BufferRef bytes) {
  bytes_ += bytes.size();
  entries_.push_back(Entry{std::move(bytes), 0, false});
}

size_t OutputQueue::fill_iov(struct iovec* iov, size_t max) const {
  size_t n = 0;
  size_t off = head_offset_;
  for (auto it = entries_.begin(); it != entries_.end() && n < max; ++it) {
    const size_t len = it->bytes.size() - off;
    if (len > 0) {
      iov[n].iov_base = const_cast<uint8_t*>(it->bytes.data() + off);
      iov[n].iov_len = len;
      ++n;
    }
    off = 0;
  }
  return n;
}

void OutputQueue::pop_head() {
  const bool was_media = entries_.front().has_timestamp;
  entries_.pop_front();
  head_offset_ = 0;
  if (!was_media) return;
  if (--media_entries_ == 0) return;
  // The next media entry is the oldest; only control entries (rare) lie before it, and each is
  // passed over at most once per media entry consumed.
  for (const Entry& e : entries_) {
    if (e.has_timestamp) {
      oldest_ts_ = e.timestamp;
      break;
    }
  }
}

void OutputQueue::consume(size_t n) {
  assert(n <= bytes_);
  n = std::min(n, bytes_);
  bytes_ -= n;
  while (!entries_.empty()) {
    const size_t rem = entries_.front().bytes.size() - head_offset_;
    if (n < rem) {
      head_offset_ += n;
      break;
    }
    n -= rem;
    pop_head();
  }
}

void OutputQueue::clear() {
  entries_.clear();
  head_offset_ = 0;
  bytes_ = 0;
  media_entries_ = 0;
  oldest_ts_ = newest_ts_ = 0;
  skipping_video_ = true;
}

}  // namespace rill::media
