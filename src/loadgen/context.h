#pragma once
// rill-bench: the state one event-loop thread shares with its connections (ThreadContext), and
// the one structure shared across threads in fanout mode (SendTimeBoard).
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "bench_options.h"
#include "loop.h"
#include "rill/protocol/handshake_mac.h"
#include "stats.h"

namespace rill::loadgen {

// Publisher send time of each video frame, keyed by the frame's RTMP timestamp, readable from any
// thread without locks: a ring of slots, each a tiny seqlock (key invalidated, value written, key
// published). Video timestamps of one publish are distinct and increasing, so a slot is only
// reused 8192 ms later, long after any player looked it up.
class SendTimeBoard {
 public:
  static constexpr size_t kSlots = 8192;
  void record(uint32_t timestamp, int64_t send_ns);
  std::optional<int64_t> lookup(uint32_t timestamp) const;

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    std::atomic<uint64_t> key{kEmpty};
    std::atomic<int64_t> ns{0};
  };
  Slot slots_[kSlots];
};

struct ThreadContext {
  explicit ThreadContext(const Options& o);

  const Options& opt;
  const bool debug;  // RILL_BENCH_DEBUG is set: print error details and stalls to stderr
  Loop loop;
  // Read by the progress reporter on the main thread (relaxed; they are counters).
  std::atomic<uint64_t> rx_bytes{0};
  std::atomic<uint64_t> tx_bytes{0};
  std::atomic<int> streaming{0};  // connections that reached playing/publishing and are open
  std::atomic<uint64_t> error_count{0};
  // Loop thread only; read after the thread has been joined.
  std::map<std::string, uint64_t> errors;
  LatencyHistogram latency;
  SendTimeBoard* board = nullptr;  // fanout: the publisher's send times
  protocol::HandshakeMac handshake_mac;  // the thread's RTMP handshakes' HMAC, set up once

  // Counts an error of this kind. With RILL_BENCH_DEBUG set in the environment, every error is
  // also printed to stderr with its detail (e.g. the exception text).
  void error(std::string_view kind, std::string_view detail = {});
};

}  // namespace rill::loadgen
