#pragma once
// TimestampRebase: one timeline for the media of successive upstreams of a pulled stream, so the
// local players stay attached across a failover with timestamps that never go back and no added
// delay.
//
// The first upstream passes through. A later one (after a failover) starts where the wall clock
// says the timeline is now: the last timestamp sent plus the time since it was sent. Its opening
// burst (the origin replays its GOP cache: a keyframe then every frame since) would put the
// players one GOP behind live; during `catch_up_ms` the mapping follows the newest frame instead,
// so the burst is compressed to the current instant (never before the last timestamp sent) and
// the live frames that follow land at the live edge.
//
// Pure: the caller passes the time. Timestamps are 32-bit RTMP milliseconds (they wrap).
#include <cstdint>

namespace rill::cluster {

class TimestampRebase {
 public:
  explicit TimestampRebase(int64_t catch_up_ms = 1000) : catch_up_ms_(catch_up_ms) {}
  // A new upstream starts: its first frame will be placed at the live edge of the timeline.
  void new_upstream();
  // The output timestamp for an upstream frame with timestamp `ts` received at `now_ms`.
  uint32_t map(uint32_t ts, int64_t now_ms);
  // The newest output timestamp (0 before any).
  uint32_t last() const { return static_cast<uint32_t>(last_out_); }

 private:
  int64_t catch_up_ms_;
  bool started_ = false;      // a frame was mapped (the timeline exists)
  bool fresh_ = true;         // the current upstream has not mapped a frame yet
  uint32_t last_in_ = 0;      // the current upstream's previous input timestamp
  int64_t ext_in_ = 0;        // the input, unwrapped
  int64_t offset_ = 0;        // out = ext_in + offset
  int64_t last_out_ = 0;      // the newest output so far
  int64_t last_out_at_ = 0;   // when it was produced
  int64_t switch_out_ = 0;    // last_out_ when the current upstream started
  int64_t switch_at_ = 0;     // and when
  int64_t catch_until_ = 0;   // the end of the current upstream's catch-up window
  bool catching_up_ = false;
};

}  // namespace rill::cluster
