#include "rill/net/flush_scheduler.h"

#include <event2/event.h>
#include <time.h>

#include <algorithm>
#include <chrono>

#include "rill/config/config.h"
#include "rill/media/output_queue.h"

namespace rill::net {

namespace {
constexpr int64_t kLoadWindowUs = 250'000;
constexpr int64_t kIdleWindowUs = MergePolicyParams{}.idle_window_us;

int64_t clock_us(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}
}  // namespace

MergeWrites merge_writes_of(const config::Config& config) {
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  return MergeWrites{config.merge_writes_auto, duration_cast<microseconds>(config.merge_writes).count(),
                     duration_cast<microseconds>(config.merge_writes_max).count()};
}

namespace {
// The hold steps with video pacing: each kVideoPaceUs puts one more video frame in a write.
MergePolicyParams paced_params() {
  MergePolicyParams p;
  p.step_us = FlushScheduler::kVideoPaceUs;
  return p;
}
}  // namespace

FlushScheduler::FlushScheduler(event_base* base, MergeWrites mode)
    : mode_(mode), policy_(mode.max_us, paced_params()) {
  held_.ev = event_new(base, -1, 0, &FlushScheduler::on_held, this);
  held_.flag = &Flushable::flush_requested_;
  now_.ev = event_new(base, -1, 0, &FlushScheduler::on_now, this);
  now_.flag = &Flushable::flush_now_requested_;
  if (mode_.automatic) {
    window_start_us_ = clock_us(CLOCK_MONOTONIC);
    window_cpu_us_ = clock_us(CLOCK_THREAD_CPUTIME_ID);
  }
}

FlushScheduler::FlushScheduler(event_base* base, int merge_ms)
    : FlushScheduler(base, MergeWrites{false, int64_t{merge_ms} * 1000, 0}) {}

FlushScheduler::~FlushScheduler() {
  event_free(held_.ev);
  event_free(now_.ev);
}

int64_t FlushScheduler::current_hold_us() const {
  return mode_.automatic ? policy_.hold_us() : mode_.fixed_us;
}

void FlushScheduler::activate(Batch& b) {
  // An activated event joins the loop's active queue behind the callbacks already ready in this
  // iteration, so every write they queue is flushed together.
  b.armed = true;
  event_active(b.ev, EV_TIMEOUT, 0);
}

void FlushScheduler::enqueue(Batch& b, Flushable* f, int64_t hold_us) {
  if (f->*b.flag) return;
  f->*b.flag = true;
  b.pending.push_back(f);
  if (b.armed) return;  // joins the batch already waiting
  if (hold_us <= 0) return activate(b);
  b.armed = true;
  timeval tv{static_cast<time_t>(hold_us / 1'000'000), static_cast<suseconds_t>(hold_us % 1'000'000)};
  event_add(b.ev, &tv);
}

void FlushScheduler::request(Flushable* f) {
  if (f->flush_requested_) return;
  if (mode_.automatic && !held_.armed) sample_load();
  enqueue(held_, f, current_hold_us());
}

int64_t FlushScheduler::reported_hold_us() const {
  if (!mode_.automatic) return mode_.fixed_us;
  if (clock_us(CLOCK_MONOTONIC) - window_start_us_ >= kIdleWindowUs) return 0;
  return policy_.hold_us();
}

uint32_t FlushScheduler::video_frames_per_write() const {
  if (!mode_.automatic) return 0;  // not counted: the fixed hold applies to every frame
  return 1 + static_cast<uint32_t>(policy_.hold_us() / kVideoPaceUs);
}

void FlushScheduler::request_frame(Flushable* f, bool video, uint32_t queued_ms) {
  if (queued_ms > kCatchUpMs) return request_now(f);
  if (video && mode_.automatic && ++f->videos_held_ >= video_frames_per_write()) return request_now(f);
  request(f);
}

void FlushScheduler::request_now(Flushable* f) { enqueue(now_, f, 0); }

void FlushScheduler::sample_load() {
  const int64_t now = clock_us(CLOCK_MONOTONIC);
  const int64_t wall = now - window_start_us_;
  if (wall < kLoadWindowUs) return;
  const int64_t cpu = clock_us(CLOCK_THREAD_CPUTIME_ID);
  policy_.sample(cpu - window_cpu_us_, wall);
  window_start_us_ = now;
  window_cpu_us_ = cpu;
}

void FlushScheduler::forget_in(Batch& b, Flushable* f) {
  if (!(f->*b.flag)) return;
  f->*b.flag = false;
  auto drop = [f](std::vector<Flushable*>& v) {
    std::replace(v.begin(), v.end(), f, static_cast<Flushable*>(nullptr));
  };
  drop(b.pending);
  drop(b.running);
}

void FlushScheduler::forget(Flushable* f) {
  forget_in(held_, f);
  forget_in(now_, f);
  if (f->ring_slot_ >= 0) {
    // Its descriptor closes and its buffers go once this returns: a send still prepared is
    // submitted (and completes) first — the kernel must not read freed memory or a reused fd.
    RingSlot& slot = slots_[static_cast<size_t>(f->ring_slot_)];
    if (!slot.done) submit_ring();
    slots_[static_cast<size_t>(f->ring_slot_)].f = nullptr;
    f->ring_slot_ = -1;
  }
}

void FlushScheduler::on_held(int, short, void* arg) {
  auto* self = static_cast<FlushScheduler*>(arg);
  self->run(self->held_);
}
void FlushScheduler::on_now(int, short, void* arg) {
  auto* self = static_cast<FlushScheduler*>(arg);
  self->run(self->now_);
}

bool FlushScheduler::send_via_ring(Flushable* f, int fd, const media::OutputQueue& q, size_t max_iov) {
  if (!ring_open_ || f->ring_slot_ >= 0) return false;
  const size_t want = std::min(q.entries(), std::min(max_iov, SendRing::kArenaIovecs));
  if (want == 0) return false;
  if (!ring_->has_room(want)) {
    submit_ring();
    if (!ring_->has_room(want)) return false;  // the ring broke: sendmsg from now on
  }
  const size_t n = q.fill_iov(ring_->iov_space(), want);
  f->ring_slot_ = static_cast<int32_t>(slots_.size());
  ring_->prepare(fd, n, slots_.size());
  slots_.push_back(RingSlot{f, 0, false});
  return true;
}

void FlushScheduler::submit_ring() {
  ring_->submit_and_wait(completions_);
  for (const SendRing::Completion& c : completions_) {
    RingSlot& slot = slots_[c.user];
    slot.result = c.result;
    slot.done = true;
  }
  completions_.clear();
}

void FlushScheduler::deliver_ring() {
  // Deliveries may prepare more sends (the rest of a partial write, a drained HTTP-FLV session's
  // next batch): they join slots_ and are submitted when the loop reaches them.
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].done) submit_ring();
    Flushable* f = slots_[i].f;
    if (!f) continue;
    const int result = slots_[i].result;
    slots_[i].f = nullptr;
    f->ring_slot_ = -1;
    f->ring_sent(result);  // may destroy other flushables: forget() clears their slots
  }
  slots_.clear();
}

void FlushScheduler::run(Batch& b) {
  const bool with_ring = ring_ && !ring_open_;
  ring_open_ = ring_open_ || with_ring;  // the batch's flushes prepare their sends
  run_flushes(b);
  if (!with_ring) return;
  deliver_ring();
  ring_open_ = false;
}

void FlushScheduler::run_flushes(Batch& b) {
  b.armed = false;
  b.running.swap(b.pending);
  for (size_t i = 0; i < b.running.size(); ++i) {
    Flushable* f = b.running[i];
    if (!f) continue;  // forgotten (closed) meanwhile
    f->*b.flag = false;
    f->videos_held_ = 0;
    b.running[i] = nullptr;
    f->flush();  // may request again (lands in pending and re-arms) or destroy other flushables
  }
  b.running.clear();
}

}  // namespace rill::net
