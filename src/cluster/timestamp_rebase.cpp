#include "rill/cluster/timestamp_rebase.h"

#include <algorithm>

namespace rill::cluster {

void TimestampRebase::new_upstream() { fresh_ = true; }

uint32_t TimestampRebase::map(uint32_t ts, int64_t now_ms) {
  if (fresh_) {
    fresh_ = false;
    ext_in_ = ts;
    last_in_ = ts;
    if (!started_) {
      offset_ = 0;  // the first upstream passes through
      catching_up_ = false;
    } else {
      switch_out_ = last_out_;
      switch_at_ = last_out_at_;
      offset_ = switch_out_ + (now_ms - switch_at_) - ext_in_;
      catching_up_ = true;
      catch_until_ = now_ms + catch_up_ms_;
    }
  } else {
    ext_in_ += static_cast<int32_t>(ts - last_in_);  // deltas, across the 32-bit wrap
    last_in_ = ts;
  }
  int64_t out = ext_in_ + offset_;
  if (catching_up_) {
    if (now_ms > catch_until_) {
      catching_up_ = false;
    } else {
      // The newest frame of the burst defines "now": earlier ones are squeezed onto it.
      const int64_t live = switch_out_ + (now_ms - switch_at_);
      offset_ = std::min(offset_, live - ext_in_);
      out = std::max(switch_out_ + 1, ext_in_ + offset_);
    }
  }
  if (!started_ || out > last_out_) {
    last_out_ = out;
    last_out_at_ = now_ms;
  }
  started_ = true;
  return static_cast<uint32_t>(out);
}

}  // namespace rill::cluster
