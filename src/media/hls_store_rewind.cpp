// HlsStore's read-back of hls.rewind segments (docs/hls.md "Rewind"): a segment of the rewind
// history keeps the live URI it was listed with; once it has left memory, a request for it is
// held (WaitTarget::recorded) while the server layer's RecordedReader reads its bytes from the
// recording file off the event loop, and answered from a small cache of the last ones read.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "rill/media/hls_store.h"

namespace rill::media {

const protocol::HlsRecordedSegment* HlsStreamState::recorded_segment(uint64_t sequence) const {
  // The history is contiguous by sequence (HlsStore::add_recorded); the removed ones are ordered.
  if (!rewind_.empty() && sequence >= rewind_.front().sequence) {
    const uint64_t at = sequence - rewind_.front().sequence;
    if (at < rewind_.size()) return &rewind_[static_cast<size_t>(at)];
  }
  const auto it =
      std::lower_bound(rewind_removed_.begin(), rewind_removed_.end(), sequence,
                       [](const RemovedRecorded& r, uint64_t s) { return r.segment.sequence < s; });
  return it != rewind_removed_.end() && it->segment.sequence == sequence ? &it->segment : nullptr;
}

double HlsStore::listed_duration_s(const HlsStreamState& st) {
  double total = st.playlist_duration_s();
  for (const auto& s : protocol::hls_recorded_run(st.playlist_.state(), st.rewind_)) total += s.duration_s;
  return total;
}

void HlsStore::remove_recorded(HlsStreamState& st, size_t count, double listed_s) {
  count = std::min(count, st.rewind_.size());
  const uint64_t window = st.playlist_.state().media_sequence;
  const int64_t now = timers_.now_ms();
  for (size_t i = 0; i < count; ++i) {
    protocol::HlsRecordedSegment& s = st.rewind_[i];
    // One still in the window was not listed from the history: it leaves with the window.
    if (s.sequence >= window) continue;
    if (!st.rewind_removed_.empty() && s.sequence <= st.rewind_removed_.back().segment.sequence) continue;
    // Non-decreasing, so that the front is always the next to go (never shorter than needed).
    int64_t expire = now + static_cast<int64_t>(std::ceil((s.duration_s + listed_s) * 1000.0));
    if (!st.rewind_removed_.empty()) expire = std::max(expire, st.rewind_removed_.back().expire_ms);
    st.rewind_removed_.push_back({std::move(s), expire});
  }
  st.rewind_.erase(st.rewind_.begin(), st.rewind_.begin() + static_cast<std::ptrdiff_t>(count));
  while (st.rewind_removed_.size() > kMaxRewindSegments) st.rewind_removed_.pop_front();
  st.playlist_cache_.reset();
  schedule_recorded_expiry(st);
}

void HlsStore::schedule_recorded_expiry(HlsStreamState& st) {
  if (st.rewind_timer_ || st.rewind_removed_.empty()) return;
  const int64_t wait = std::max<int64_t>(0, st.rewind_removed_.front().expire_ms - timers_.now_ms());
  st.rewind_timer_ =
      timers_.schedule(std::chrono::milliseconds(wait), [this, key = st.key_] { expire_recorded(key); });
}

void HlsStore::expire_recorded(const StreamKey& key) {
  HlsStreamState* st = find_mut(key);
  if (!st) return;
  st->rewind_timer_.reset();
  const int64_t now = timers_.now_ms();
  while (!st->rewind_removed_.empty() && st->rewind_removed_.front().expire_ms <= now)
    st->rewind_removed_.pop_front();
  schedule_recorded_expiry(*st);
}

void HlsStore::read_recorded(const StreamKey& key, uint64_t sequence) {
  HlsStreamState* st = find_mut(key);
  if (!st || !reader_) return;
  if (std::find(st->reading_.begin(), st->reading_.end(), sequence) != st->reading_.end()) return;
  const protocol::HlsRecordedSegment* s = st->recorded_segment(sequence);
  if (!s || !s->path) return;
  auto done = [this, key, sequence](BufferRef data) { recorded_read(key, sequence, std::move(data)); };
  // Not queued (the reader is busy): the held request times out and gets 404.
  if (reader_(*s->path, s->offset, s->length, std::move(done))) st->reading_.push_back(sequence);
}

void HlsStore::recorded_read(const StreamKey& key, uint64_t sequence, BufferRef data) {
  HlsStreamState* st = find_mut(key);
  if (!st) return;
  std::erase(st->reading_, sequence);
  if (data) {
    if (!st->file(protocol::HlsSegmentForm::Fmp4, sequence))
      st->read_back_.emplace_back(sequence, std::move(data));
    while (st->read_back_.size() > HlsStreamState::kReadBack) st->read_back_.pop_front();
  } else {
    stream_log(*st).warn("hls: {}: segment {} could not be read back from its recording", st->key_text_,
                         sequence);
  }
  wake(key);
}

}  // namespace rill::media
