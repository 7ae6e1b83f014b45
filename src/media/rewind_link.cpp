#include "rill/media/rewind_link.h"

#include "rill/media/hls_store.h"
#include "rill/protocol/percent_coding.h"
#include "rill/record/recording_catalog.h"
#include "rill/record/recording_files.h"

namespace rill::media {

RewindLink::RewindLink(HlsStore& store, StreamKey key, std::string path_template)
    : store_(store), key_(std::move(key)), template_(std::move(path_template)) {}

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
  if (path != uri_path_ || !uri_) {
    // The id the catalog gives the file (a hash of the app and its path below the app's root),
    // so /recordings/ID/FILE finds it (server/recording_file_route.h).
    const std::string root = record::recording_root(template_, key_.app);
    const std::string below = path.substr(std::min(path.size(), root.size() + 1));
    uri_path_ = path;
    uri_ = std::make_shared<const std::string>("/recordings/" + record::recording_id(key_.app, below) + "/" +
                                               protocol::percent_encode(path.substr(path.rfind('/') + 1)));
  }
  protocol::HlsRecordedSegment s;
  s.sequence = cut.sequence;
  s.duration_s = cut.duration_s;
  s.discontinuity = cut.discontinuity;
  s.uri = uri_;
  s.offset = offset;
  s.length = length;
  store_.add_recorded(key_, cut.init_id, std::move(s));
}

}  // namespace rill::media
