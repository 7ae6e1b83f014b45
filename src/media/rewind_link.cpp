#include "rill/media/rewind_link.h"

#include "rill/media/hls_store.h"

namespace rill::media {

RewindLink::RewindLink(HlsStore& store, StreamKey key) : store_(store), key_(std::move(key)) {}

void RewindLink::segment_closed(uint64_t sequence, double duration_s, bool discontinuity, int64_t end_dts) {
  if (!on_cut_) return;
  Cut c;
  c.sequence = sequence;
  c.duration_s = duration_s;
  c.discontinuity = discontinuity;
  c.end_ts = static_cast<uint32_t>(end_dts);
  c.init = store_.current_init(key_, c.init_id);
  on_cut_(c);
}

uint32_t RewindLink::time_of(uint32_t ts) const {
  const int64_t t = last_dts_ + static_cast<int32_t>(ts - last_ts_);
  return t < 0 ? 0 : static_cast<uint32_t>(t);
}

void RewindLink::recorded(const Cut& cut, const std::string& path, uint64_t offset, uint64_t length) {
  if (!path_ || *path_ != path) path_ = std::make_shared<const std::string>(path);  // shared by its segments
  protocol::HlsRecordedSegment s;
  s.sequence = cut.sequence;
  s.duration_s = cut.duration_s;
  s.discontinuity = cut.discontinuity;
  s.path = path_;
  s.offset = offset;
  s.length = length;
  store_.add_recorded(key_, cut.init_id, std::move(s));
}

}  // namespace rill::media
