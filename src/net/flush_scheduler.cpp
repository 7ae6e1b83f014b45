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
  held_ev_ = event_new(base, -1, 0, &FlushScheduler::on_held, this);
  now_.ev = event_new(base, -1, 0, &FlushScheduler::on_now, this);
  timespec res{};
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0 && res.tv_nsec <= 5'000'000) {
    clock_ = CLOCK_MONOTONIC_COARSE;
    due_slack_us_ = 1000 + res.tv_nsec / 1000;
  }
  if (mode_.automatic) {
    window_start_us_ = now_us();
    window_cpu_us_ = clock_us(CLOCK_THREAD_CPUTIME_ID);
  }
}

FlushScheduler::FlushScheduler(event_base* base, int merge_ms)
    : FlushScheduler(base, MergeWrites{false, int64_t{merge_ms} * 1000, 0}) {}

FlushScheduler::~FlushScheduler() {
  event_free(held_ev_);
  event_free(now_.ev);
}

int64_t FlushScheduler::now_us() const { return clock_us(clock_); }

int64_t FlushScheduler::current_hold_us() const {
  return mode_.automatic ? policy_.hold_us() : mode_.fixed_us;
}

int64_t FlushScheduler::bound_us() const {
  if (!mode_.automatic) return mode_.fixed_us;
  if (policy_.hold_us() <= 0) return 0;
  // Held until the video frame that paces the write: a little over the frame intervals it spans.
  const int64_t paced = int64_t{video_frames_per_write()} * kVideoPaceUs + kPaceSlackUs;
  return std::min(mode_.max_us, paced);
}

void FlushScheduler::activate_now() {
  // An activated event joins the loop's active queue behind the callbacks already ready in this
  // iteration, so every write they queue is flushed together.
  now_.armed = true;
  event_active(now_.ev, EV_TIMEOUT, 0);
}

void FlushScheduler::request(Flushable* f) {
  if (f->flush_requested_ || f->flush_now_requested_) return;  // flushes anyway
  if (!mode_.automatic && mode_.fixed_us <= 0) return request_now(f);
  const int64_t now = now_us();
  if (mode_.automatic) sample_load(now);
  const int64_t bound = bound_us();
  if (bound <= 0) return request_now(f);
  f->flush_requested_ = true;
  f->held_due_us_ = now + bound;
  held_.push_back(HeldRequest{f, f->held_due_us_});
  if (held_armed_for_us_ < 0) arm_held();
}

void FlushScheduler::arm_held() {
  while (!held_.empty() && !live(held_.front())) held_.pop_front();
  if (held_.empty()) return;
  const int64_t due = held_.front().due_us;
  const int64_t delay = std::max<int64_t>(0, due - now_us());
  timeval tv{static_cast<time_t>(delay / 1'000'000), static_cast<suseconds_t>(delay % 1'000'000)};
  event_add(held_ev_, &tv);
  held_armed_for_us_ = due;
}

bool FlushScheduler::idle_now() const {
  return mode_.automatic && now_us() - window_start_us_ >= kIdleWindowUs;
}

int64_t FlushScheduler::reported_hold_us() const { return idle_now() ? 0 : bound_us(); }

uint32_t FlushScheduler::reported_video_frames() const {
  return idle_now() || bound_us() <= 0 ? 0 : video_frames_per_write();
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

void FlushScheduler::request_now(Flushable* f) {
  if (f->flush_now_requested_) return;
  f->flush_now_requested_ = true;
  now_.pending.push_back(f);
  if (!now_.armed) activate_now();
}

void FlushScheduler::sample_load(int64_t now) {
  const int64_t wall = now - window_start_us_;
  if (wall < kLoadWindowUs) return;
  const int64_t cpu = clock_us(CLOCK_THREAD_CPUTIME_ID);
  policy_.sample(cpu - window_cpu_us_, wall);
  window_start_us_ = now;
  window_cpu_us_ = cpu;
}

void FlushScheduler::forget(Flushable* f) {
  auto drop = [f](std::vector<Flushable*>& v) {
    std::replace(v.begin(), v.end(), f, static_cast<Flushable*>(nullptr));
  };
  if (f->flush_now_requested_) {
    f->flush_now_requested_ = false;
    drop(now_.pending);
    drop(now_.running);
  }
  // Held entries outlive their request (stale ones wait to be dropped): always looked for.
  f->flush_requested_ = false;
  for (HeldRequest& r : held_) {
    if (r.f == f) r.f = nullptr;
  }
  drop(held_running_);
  if (f->ring_slot_ >= 0) {
    // Its descriptor closes and its buffers go once this returns: a send still prepared is
    // submitted (and completes) first — the kernel must not read freed memory or a reused fd.
    RingSlot& slot = slots_[static_cast<size_t>(f->ring_slot_)];
    if (!slot.done) submit_ring();
    slots_[static_cast<size_t>(f->ring_slot_)].f = nullptr;
    f->ring_slot_ = -1;
  }
}

void FlushScheduler::on_held(int, short, void* arg) { static_cast<FlushScheduler*>(arg)->run_held(); }
void FlushScheduler::on_now(int, short, void* arg) { static_cast<FlushScheduler*>(arg)->run_now(); }

void FlushScheduler::run_now() {
  now_.armed = false;
  now_.running.swap(now_.pending);
  run(now_.running, true);
  now_.running.clear();
}

void FlushScheduler::run_held() {
  held_armed_for_us_ = -1;
  const int64_t now = now_us();
  if (mode_.automatic) sample_load(now);
  // In request order; due times ascend but for a bound that shrank meanwhile (a later request then
  // waits for the earlier one's time, at most the longer bound).
  while (!held_.empty()) {
    const HeldRequest r = held_.front();
    if (live(r)) {
      if (r.due_us > now + due_slack_us_) break;
      held_running_.push_back(r.f);
    }
    held_.pop_front();
  }
  run(held_running_, false);
  held_running_.clear();
  if (held_armed_for_us_ < 0) arm_held();
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

void FlushScheduler::run(std::vector<Flushable*>& running, bool now) {
  const bool with_ring = ring_ && !ring_open_;
  ring_open_ = ring_open_ || with_ring;  // the batch's flushes prepare their sends
  run_flushes(running, now);
  if (!with_ring) return;
  deliver_ring();
  ring_open_ = false;
}

void FlushScheduler::run_flushes(std::vector<Flushable*>& running, bool now) {
  for (size_t i = 0; i < running.size(); ++i) {
    Flushable* f = running[i];
    if (!f) continue;  // forgotten (closed) meanwhile
    if (now) f->flush_now_requested_ = false;
    f->flush_requested_ = false;  // what a held request waits for leaves now as well
    f->videos_held_ = 0;
    running[i] = nullptr;
    f->flush();  // may request again or destroy other flushables (forget() clears them here)
  }
}

}  // namespace rill::net
