// The Recorder's part in hls.rewind (recorder.h, media/rewind_link.h; docs/hls.md "Rewind").
#include <fmt/format.h>

#include <algorithm>

#include "rill/media/recorder.h"

namespace rill::media {

std::string Recorder::queue_full() const {
  return fmt::format("the write queue is full ({:.1f} MiB waiting)",
                     static_cast<double>(writer_.queued_bytes()) / (1 << 20));
}

void Recorder::follow_segments(std::shared_ptr<RewindLink> link) {
  rewind_ = std::move(link);
  rewind_->on_cut([this](const RewindLink::Cut& c) { on_segment_cut(c); });
}

// The segmenter closed a live segment before the frame that comes next (the segmenter is an
// output before this one): the fragment ends here too, so the segment is a run of whole
// fragments [segment_offset_, handed_) of the file.
void Recorder::on_segment_cut(const RewindLink::Cut& c) {
  at_boundary_ = true;
  if (stopped_ || !file_) return;
  check_file();
  if (!file_) return;
  rf_->cut(c.end_ts, buf_);
  last_flush_ = now_;
  if (!hand_off()) return fail(queue_full(), true);
  // The fragments decode with the live EXT-X-MAP only when the file's moov is that init section.
  const bool same_init = c.init && c.init.size() == moov_.size() &&
                         std::equal(moov_.begin(), moov_.end(), c.init.span().begin());
  if (segment_offset_ && same_init && handed_ > *segment_offset_) {
    if (recorded_.size() >= kMaxRecordedRuns) recorded_.pop_front();  // the disk is far behind
    recorded_.push_back(RecordedRun{c, file_, *segment_offset_, handed_ - *segment_offset_});
  }
  segment_offset_ = handed_;
}

// Runs whose bytes the writer has written go to the link (a file that failed drops its runs).
void Recorder::hand_back_written() {
  while (!recorded_.empty()) {
    const RecordedRun& r = recorded_.front();
    if (!r.file->error()) {
      if (r.file->written() < r.offset + r.length) return;
      rewind_->recorded(r.cut, r.file->path(), r.offset, r.length);
    }
    recorded_.pop_front();
  }
}

}  // namespace rill::media
