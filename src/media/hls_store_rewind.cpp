// HlsStore's read-back of hls.rewind segments (docs/hls.md "Rewind"): a segment of the rewind
// history keeps the live URI it was listed with; once it has left memory, a request for it is
// held (WaitTarget::recorded) while the server layer's RecordedReader reads its bytes from the
// recording file off the event loop, and answered from a small cache of the last ones read.
#include <algorithm>

#include "rill/media/hls_store.h"

namespace rill::media {

const protocol::HlsRecordedSegment* HlsStreamState::recorded_segment(uint64_t sequence) const {
  // Contiguous by sequence (HlsStore::add_recorded).
  if (rewind_.empty() || sequence < rewind_.front().sequence) return nullptr;
  const uint64_t at = sequence - rewind_.front().sequence;
  return at < rewind_.size() ? &rewind_[static_cast<size_t>(at)] : nullptr;
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
