#pragma once
// FlushScheduler: batches socket writes. Whatever a callback queues for a connection (one
// publisher read may fan out a video frame and several audio frames to 1000 players) is written
// once, with one writev per connection, when the loop has run the callbacks that are ready.
//
// How long writes wait (config `merge_writes`, docs/configuration.md):
//  - 0 (hold 0): flush in the current loop iteration — no added latency;
//  - a fixed duration: flushes wait that long so that more frames go out per writev (SRS's trade);
//  - auto (the default): the hold follows the worker's load (MergePolicy, merge_policy.h): 0 while
//    the worker is idle or lightly loaded, growing up to a cap while it is busy. The load is the
//    worker thread's CPU utilization, sampled here every ~250 ms with CLOCK_THREAD_CPUTIME_ID and
//    CLOCK_MONOTONIC — one clock read per held batch, one CPU-clock read per window.
// request_now() never waits, whatever the mode: a new player's first burst (metadata, sequence
// headers, the GOP cache), protocol replies, a player that fell behind, internal links.
//
// Video paces the hold (auto mode): request_frame() counts the video frames each flushable queued
// since its last flush and flushes it at once when it holds video_frames_per_write() of them:
// one while the hold is under kVideoPaceUs, one more per further kVideoPaceUs. The audio and data
// frames held meanwhile leave in the same writev. Under a short hold video therefore goes out at
// once, and only the audio waits for it — a player cannot present that audio before the video
// frame of the same time arrives anyway, and it removes most of the sends (a 30 fps + 44.1 kHz AAC
// stream is ~73 frames a second, ~30 of them video). Under a longer hold two (three) video frames
// share a write: a video frame waits one (two) frame intervals, never a timer's phase.
// Every held request is also bounded by a deadline of its own (request time + bound_us()): in auto
// mode a little over the frame intervals a write spans (so that audio waits for its video frame
// rather than leaving alone just before it), in a fixed mode the hold. Deadlines are per flushable,
// not per batch: one timer armed by the earliest request would flush a player whose first frame
// came a moment before it fired — the leak that made one video frame per write cost ~40 sends a
// second per player at 25 fps instead of 25. The fixed modes hold every frame alike.
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "rill/net/merge_policy.h"
#include "rill/net/send_ring.h"

struct event_base;
struct event;

namespace rill::config {
struct Config;
}
namespace rill::media {
class OutputQueue;
}

namespace rill::net {

class Flushable {
 public:
  virtual ~Flushable() = default;
  virtual void flush() = 0;

 protected:
  // A send prepared through FlushScheduler::send_via_ring() has not reported yet: the queue's
  // head is the kernel's until ring_sent() (append only; flush() waits for the result).
  bool send_in_ring() const { return ring_slot_ >= 0; }
  // The result of that send: bytes written or -errno.
  virtual void ring_sent(int /*result*/) {}

 private:
  friend class FlushScheduler;
  bool flush_requested_ = false;  // a held request is pending...
  int64_t held_due_us_ = 0;       // ...due then (the scheduler's clock, µs)
  bool flush_now_requested_ = false;
  uint32_t videos_held_ = 0;  // video frames queued since the last flush (auto mode)
  int32_t ring_slot_ = -1;    // index of its prepared send in the running batch
};

struct MergeWrites {
  bool automatic = false;  // auto: the hold follows the load, up to max_us
  int64_t fixed_us = 0;    // fixed hold when !automatic (0: flush in this loop iteration)
  int64_t max_us = 0;      // auto: the cap
};
// The keys `merge_writes` and `merge_writes_max`.
MergeWrites merge_writes_of(const config::Config& config);

class FlushScheduler {
 public:
  FlushScheduler(event_base* base, MergeWrites mode);
  // Fixed hold of merge_ms (0: flush in the current loop iteration).
  explicit FlushScheduler(event_base* base, int merge_ms = 0);
  ~FlushScheduler();
  FlushScheduler(const FlushScheduler&) = delete;
  FlushScheduler& operator=(const FlushScheduler&) = delete;

  // Flush f within bound_us() of now (0: in this iteration), or earlier if it flushes for another
  // reason meanwhile. Idempotent until the flush ran. The Flushable must call
  // forget() before it is destroyed.
  void request(Flushable* f);
  // A media frame was queued for f, whose queue now spans queued_ms of media: request(), except
  // that f flushes in this iteration when the video frame makes video_frames_per_write() held
  // (auto mode), or in any mode when more than kCatchUpMs is queued (a player that fell behind,
  // or a GOP-cache burst, catches up without waiting for the timer). Pass queued_ms 0 while the
  // socket is full: its writability flushes it then.
  void request_frame(Flushable* f, bool video, uint32_t queued_ms = 0);
  static constexpr uint32_t kCatchUpMs = 500;
  // Flush f in this loop iteration, whatever the hold (it may also run again when a held request
  // fires: a flush of an empty queue costs nothing).
  void request_now(Flushable* f);
  static constexpr int64_t kVideoPaceUs = 40'000;
  // Auto mode: how much longer than the frame intervals a write spans a held frame may wait, so
  // that the video frame that paces it (publisher jitter, a 24 fps stream) arrives first.
  static constexpr int64_t kPaceSlackUs = 10'000;
  void forget(Flushable* f);

  int64_t current_hold_us() const;  // the hold in force (auto: the policy's; 0: never held)
  int64_t bound_us() const;         // the longest a request() made now waits (0: this iteration)
  // The hold as the stats report it: the longest a held write waits now (bound_us()). Auto mode
  // samples the load only when writes are requested, so after a second without any the hold is
  // reported as the 0 the next request will find.
  int64_t reported_hold_us() const;
  // Auto mode, as reported: 0 not held, 1 video leaves at once (the audio before it waits for
  // it), n: n video frames a write (a video frame waits up to n - 1 frame intervals).
  uint32_t reported_video_frames() const;
  uint32_t video_frames_per_write() const;
  // ---- io_uring (`send_method: io_uring`, send_ring.h)
  // Sends of the connections a batch flushes go through ring: prepared during the batch,
  // submitted together, their results delivered (ring_sent()) before the batch ends.
  void use_ring(std::unique_ptr<SendRing> ring) { ring_ = std::move(ring); }
  bool uses_ring() const { return ring_ != nullptr; }
  // From a flush(): while a batch runs with a ring, prepares the send of up to max_iov of q's
  // head buffers to fd for f and returns true (the result comes back through f->ring_sent();
  // until then q may only grow at its end). False: send it yourself.
  bool send_via_ring(Flushable* f, int fd, const media::OutputQueue& q, size_t max_iov);

  const MergePolicy* policy() const { return mode_.automatic ? &policy_ : nullptr; }
  MergePolicy* policy() { return mode_.automatic ? &policy_ : nullptr; }  // tests feed it samples

 private:
  // The flushables to flush in this iteration and the event that runs them.
  struct Batch {
    event* ev = nullptr;
    bool armed = false;
    std::vector<Flushable*> pending;
    std::vector<Flushable*> running;
  };
  // Held requests in the order they were made, each with its due time. Entries go stale when
  // their flushable flushes earlier (a video frame, request_now()); they are dropped on the way.
  struct HeldRequest {
    Flushable* f;  // nullptr: forgotten
    int64_t due_us;
  };
  static void on_held(int, short, void* arg);
  static void on_now(int, short, void* arg);
  void run_now();
  void run_held();
  void arm_held();  // the timer for the first live held request, if any
  // Flushes each of running (through the ring when there is one); `now`: the now batch, which
  // satisfies a held request too. Flushes may request again or forget() others.
  void run(std::vector<Flushable*>& running, bool now);
  static void run_flushes(std::vector<Flushable*>& running, bool now);
  static bool live(const HeldRequest& r) {
    return r.f && r.f->flush_requested_ && r.f->held_due_us_ == r.due_us;
  }
  int64_t now_us() const;
  bool idle_now() const;  // auto: no write requested for a second (the next request resets the hold)
  // Submits what the ring holds and files each result in its slot.
  void submit_ring();
  // Delivers every slot's result, submitting the sends that deliveries prepare, until none is left.
  void deliver_ring();
  void activate_now();
  void sample_load(int64_t now_us);

  MergeWrites mode_;
  MergePolicy policy_;
  // Due times and load windows use CLOCK_MONOTONIC_COARSE where its tick is fine enough (a few
  // ns a read instead of tens): a held request is due within due_slack_us_ of its time.
  clockid_t clock_ = CLOCK_MONOTONIC;
  int64_t due_slack_us_ = 1000;
  Batch now_;
  event* held_ev_ = nullptr;
  int64_t held_armed_for_us_ = -1;  // the due time the held timer fires for; -1: not armed
  std::deque<HeldRequest> held_;
  std::vector<Flushable*> held_running_;
  // auto: the current load window
  int64_t window_start_us_ = 0;
  int64_t window_cpu_us_ = 0;
  // io_uring: the sends of the running batch, by Flushable::ring_slot_
  struct RingSlot {
    Flushable* f = nullptr;  // nullptr: forgotten or delivered
    int result = 0;
    bool done = false;  // submitted and completed
  };
  std::unique_ptr<SendRing> ring_;
  bool ring_open_ = false;  // a batch runs: flushes may prepare sends
  std::vector<RingSlot> slots_;
  std::vector<SendRing::Completion> completions_;
};

}  // namespace rill::net
