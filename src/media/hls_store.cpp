#include "rill/media/hls_store.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace rill::media {

namespace {
constexpr int64_t kMinGraceMs = 30000;

double fragment_s(const config::HlsConfig& cfg) { return static_cast<double>(cfg.fragment.count()) / 1000.0; }
}  // namespace

// ---------------------------------------------------------------------------------------------
// HlsStreamState

HlsStreamState::HlsStreamState(StreamKey key, const config::HlsConfig& cfg)
    : key_(std::move(key)), key_text_(key_.str()), cfg_(cfg), playlist_(cfg.window, fragment_s(cfg)) {
  if (cfg.low_latency) playlist_.set_low_latency(static_cast<double>(cfg.part.count()) / 1000.0);
  playlist_.set_rendition_reports(rendition_report_uris(key_, cfg));
}

protocol::HlsProgress HlsStreamState::progress() const {
  return protocol::HlsProgress{playlist_.next_sequence(), playlist_.state().open_parts.size(),
                               playlist_.ended()};
}

// The text and the target duration are rendered together and forgotten together (each change
// resets playlist_cache_), so neither can outlive the playlist it was made from.
void HlsStreamState::render_cache() const {
  playlist_cache_ = SharedBuffer::copy_of(std::string_view(playlist_.render(false, rewind_view())));
  target_cache_ = protocol::hls_target_duration(playlist_.state());
}

BufferRef HlsStreamState::playlist_text() const {
  ++playlist_reads_;
  if (!playlist_cache_) render_cache();
  return playlist_cache_;
}

uint32_t HlsStreamState::target_duration() const {
  if (!playlist_cache_) render_cache();
  return target_cache_;
}

const HlsSegment* HlsStreamState::segment(uint64_t sequence) const {
  if (segments_.empty()) return nullptr;
  const uint64_t first = segments_.front().sequence;
  if (sequence < first || sequence - first >= segments_.size()) return nullptr;
  return &segments_[static_cast<size_t>(sequence - first)];
}

const BufferRef* HlsStreamState::init(uint64_t id) const {
  auto it = inits_.find(id);
  return it == inits_.end() ? nullptr : &it->second;
}

const BufferRef* HlsStreamState::file(protocol::HlsSegmentForm form, uint64_t number) const {
  using protocol::HlsSegmentForm;
  if (form == HlsSegmentForm::Init) return init(number);
  if (form == HlsSegmentForm::Part) {
    if (parts_.empty() || number < parts_.front().index || number - parts_.front().index >= parts_.size())
      return nullptr;
    return &parts_[static_cast<size_t>(number - parts_.front().index)].data;
  }
  if (const HlsSegment* seg = segment(number)) return seg->form == form ? &seg->data : nullptr;
  // A read-back copy only while its segment is available (listed, or removed within §6.2.2).
  if (form != HlsSegmentForm::Fmp4 || !recorded_segment(number)) return nullptr;
  for (const auto& [sequence, data] : read_back_) {
    if (sequence == number) return &data;
  }
  return nullptr;
}

double HlsStreamState::playlist_duration_s() const {
  double total = 0;
  for (const auto& s : playlist_.state().segments) total += s.duration_s;
  return total;
}

uint32_t HlsStreamState::segment_max_age_s() const {
  const double d = playlist_duration_s() + playlist_.state().target_duration;
  return static_cast<uint32_t>(std::ceil(std::min(d, 86400.0)));
}

HlsStreamStats HlsStreamState::stats() const {
  HlsStreamStats s;
  s.segments_produced = produced_;
  s.segments_expired = expired_;
  s.segments_held = segments_.size();
  s.segments_retained = retired_;
  s.bytes_held = bytes_;
  s.media_sequence = playlist_.state().media_sequence;
  s.live = live();
  return s;
}

// ---------------------------------------------------------------------------------------------
// HlsStore

HlsStore::HlsStore(TimerQueue& timers, spdlog::logger& log) : timers_(timers), log_(log) {}

HlsStore::~HlsStore() {
  for (auto& [k, st] : streams_) cancel_timers(*st);
  for (auto& [id, w] : waits_) timers_.cancel(w.timer);  // their owners go with the worker
}

void HlsStore::cancel_timers(HlsStreamState& st) {
  if (st.expiry_timer_) timers_.cancel(*st.expiry_timer_);
  if (st.grace_timer_) timers_.cancel(*st.grace_timer_);
  if (st.rewind_timer_) timers_.cancel(*st.rewind_timer_);
  st.expiry_timer_.reset();
  st.grace_timer_.reset();
  st.rewind_timer_.reset();
}

HlsStreamState* HlsStore::find_mut(const StreamKey& key) {
  auto it = streams_.find(key);
  return it == streams_.end() ? nullptr : it->second.get();
}

const HlsStreamState* HlsStore::find(const StreamKey& key) const {
  auto it = streams_.find(key);
  return it == streams_.end() ? nullptr : it->second.get();
}

int64_t HlsStore::grace_ms(const HlsStreamState& st) {
  // Twice the segment max-age: a cache that kept a segment of this run has let it go before a
  // later, unrelated run could reuse its sequence number.
  const int64_t by_window = 2 * static_cast<int64_t>(st.cfg_.window) * st.cfg_.fragment.count();
  const int64_t by_cache = 2 * 1000 * static_cast<int64_t>(st.segment_max_age_s());
  return std::max({kMinGraceMs, by_window, by_cache});
}

core::StreamLog HlsStore::stream_log(const HlsStreamState& st) const { return {log_, st.key_text_}; }

void HlsStore::open(const StreamKey& key, const config::HlsConfig& cfg) {
  auto it = streams_.find(key);
  if (it == streams_.end()) {
    it = streams_.emplace(key, std::make_unique<HlsStreamState>(key, cfg)).first;
    stream_log(*it->second)
        .debug("hls: {} started (window {}, fragment {} ms)", it->second->key_text_, cfg.window,
               cfg.fragment.count());
    if (auto at = continuity_ ? continuity_->recall(it->second->key_text_) : std::nullopt) {
      it->second->playlist_.continue_from(at->next_sequence, at->discontinuities);
      stream_log(*it->second)
          .info("hls: {} continues at media sequence {} (published before on another worker)",
                it->second->key_text_, at->next_sequence);
    }
  } else {
    HlsStreamState& st = *it->second;
    if (st.grace_timer_) {
      timers_.cancel(*st.grace_timer_);
      st.grace_timer_.reset();
    }
    if (st.producers_ > 0) stream_log(st).warn("hls: {} opened by a second producer", st.key_text_);
    remove_recorded(st, st.rewind_.size(), listed_duration_s(st));  // rewind covers the current publish
    // §6.2.2: the media sequence continues; the new publisher's timeline is a discontinuity.
    st.playlist_.restart();
    st.cfg_.rewind = cfg.rewind;
    st.multivariant_.reset();  // the new publisher's tracks decide again
    // A reload may have changed the container: the new segments follow it (older ones keep
    // the names they were listed with until they expire).
    st.cfg_.container = cfg.container;
    st.cfg_.low_latency = cfg.low_latency;
    st.cfg_.part = cfg.part;
    st.playlist_.set_low_latency(cfg.low_latency ? static_cast<double>(cfg.part.count()) / 1000.0 : 0.0);
    st.playlist_cache_.reset();
    stream_log(st).info("hls: {} resumed at media sequence {} (discontinuity)", st.key_text_,
                        st.playlist_.next_sequence());
  }
  ++it->second->producers_;
}

std::optional<uint64_t> HlsStore::add_segment(const StreamKey& key, BufferRef data, double duration_s,
                                              bool discontinuity) {
  HlsStreamState* stp = find_mut(key);
  if (!stp || stp->producers_ == 0) return std::nullopt;
  HlsStreamState& st = *stp;
  const double listed_before = st.playlist_duration_s();
  const double listed_all_before = listed_duration_s(st);  // with the history (hls.rewind)
  const uint64_t seq = st.playlist_.next_sequence();
  // Relative to the playlist at /APP/STREAM.m3u8, "STREAM/SEQ.ts" is /APP/STREAM/SEQ.ts (§4.1);
  // fMP4 segments are STREAM/SEQ.m4s, their init section STREAM/init-ID.mp4.
  const std::string base = st.key_.name + "/";
  std::string map_uri;
  if (st.fmp4()) map_uri = base + protocol::hls_segment_file(protocol::HlsSegmentForm::Init, st.init_id_);
  const auto form = st.fmp4() ? protocol::HlsSegmentForm::Fmp4 : protocol::HlsSegmentForm::Ts;
  auto added = st.playlist_.add_segment(duration_s, discontinuity,
                                        base + protocol::hls_segment_file(form, seq), std::move(map_uri));
  HlsSegment seg;
  seg.init_id = st.init_id_;
  seg.form = form;
  seg.sequence = added.sequence;
  seg.duration_s = st.playlist_.state().segments.back().duration_s;
  seg.data = std::move(data);
  st.bytes_ += seg.data.size();
  st.segments_.push_back(std::move(seg));
  ++st.produced_;
  st.playlist_cache_.reset();
  if (continuity_)
    continuity_->remember(st.key_text_,
                          {st.playlist_.next_sequence(), st.playlist_.discontinuities_so_far()});

  // §6.2.2: a segment removed from the playlist stays available for its duration plus the
  // duration of the longest playlist that contained it (the one served before this change).
  const int64_t now = timers_.now_ms();
  // hls.rewind: a segment that left the window without its recorded copy ends the history there.
  if (!st.rewind_.empty() && st.rewind_.back().sequence + 1 < st.playlist_.state().media_sequence)
    remove_recorded(st, st.rewind_.size(), listed_all_before);
  for (const auto& removed : added.removed) {
    // One that goes on listed from the history is kept in memory as long as without it.
    const double keep_s =
        removed.duration_s + (st.recorded_segment(removed.sequence) ? listed_before : listed_all_before);
    retire(st, removed.sequence, now + static_cast<int64_t>(std::ceil(keep_s * 1000.0)));
  }
  if (st.retired_ > max_retained(st)) {
    stream_log(st).debug("hls: {}: segments arrive faster than real time; freeing retained ones early",
                         st.key_text_);
    while (st.retired_ > max_retained(st)) pop_retired(st);
  }
  wake(key);
  return added.sequence;
}

BufferRef HlsStore::current_init(const StreamKey& key, uint64_t& id) const {
  const HlsStreamState* st = find(key);
  id = st ? st->init_id_ : 0;
  const BufferRef* init = st ? st->init(id) : nullptr;
  return init ? *init : BufferRef{};
}

void HlsStore::add_recorded(const StreamKey& key, uint64_t init_id, protocol::HlsRecordedSegment s) {
  HlsStreamState* st = find_mut(key);
  if (!st || st->producers_ == 0 || st->cfg_.rewind.count() == 0 || init_id != st->init_id_) return;
  auto& h = st->rewind_;
  const double listed_s = listed_duration_s(*st);
  if (!h.empty() && s.sequence != h.back().sequence + 1) remove_recorded(*st, h.size(), listed_s);
  // A segment that already left the window unrecorded cannot come back (RFC 8216 §6.2.1: the
  // playlist only loses segments at its front).
  if (h.empty() && s.sequence < st->playlist_.state().media_sequence) return;
  h.push_back(std::move(s));
  double total = 0;
  for (const auto& e : h) total += e.duration_s;
  const double limit = static_cast<double>(st->cfg_.rewind.count()) / 1000.0;
  size_t drop = 0;
  while (drop < h.size() && (total > limit || h.size() - drop > kMaxRewindSegments))
    total -= h[drop++].duration_s;
  remove_recorded(*st, drop, listed_s);  // past rewind: RFC 8216 §6.2.2 still applies
}

void HlsStore::set_init(const StreamKey& key, BufferRef init) {
  HlsStreamState* st = find_mut(key);
  if (!st || st->producers_ == 0) return;
  remove_recorded(*st, st->rewind_.size(), listed_duration_s(*st));  // recorded under another init section
  st->inits_.emplace(++st->init_id_, std::move(init));
  // Only fMP4 has init sections: a segmenter that switched to fMP4 for codecs MPEG-TS does not
  // carry (AV1, VP9, Opus) under hls.container: ts makes the segments that follow fMP4 too.
  st->cfg_.container = config::HlsContainer::Fmp4;
}

void HlsStore::add_part(const StreamKey& key, BufferRef data, double duration_s, bool independent) {
  HlsStreamState* st = find_mut(key);
  if (!st || st->producers_ == 0) return;
  const std::string base = st->key_.name + "/";
  const uint64_t index = st->next_part_++;
  std::string map_uri;
  if (st->init_id_) map_uri = base + protocol::hls_segment_file(protocol::HlsSegmentForm::Init, st->init_id_);
  st->playlist_.add_part(duration_s, independent,
                         base + protocol::hls_segment_file(protocol::HlsSegmentForm::Part, index),
                         std::move(map_uri));
  st->playlist_.set_preload_hint(base +
                                 protocol::hls_segment_file(protocol::HlsSegmentForm::Part, st->next_part_));
  st->bytes_ += data.size();
  st->parts_.push_back(HlsPart{index, st->playlist_.next_sequence(), std::move(data)});
  st->playlist_cache_.reset();
  wake(key);
}

void HlsStore::retire(HlsStreamState& st, uint64_t sequence, int64_t expire_ms) {
  // Segments retire oldest first; expiry times are kept non-decreasing so that the front is
  // always the next to go (a segment may live a little longer than needed, never shorter).
  for (auto& s : st.segments_) {
    if (s.retired) {
      expire_ms = std::max(expire_ms, s.expire_ms);
      continue;
    }
    if (s.sequence != sequence) break;  // not held (cannot happen: contiguous)
    s.retired = true;
    s.expire_ms = expire_ms;
    ++st.retired_;
    break;
  }
  schedule_expiry(st);
}

void HlsStore::schedule_expiry(HlsStreamState& st) {
  if (st.expiry_timer_ || st.segments_.empty() || !st.segments_.front().retired) return;
  const int64_t wait = std::max<int64_t>(0, st.segments_.front().expire_ms - timers_.now_ms());
  st.expiry_timer_ =
      timers_.schedule(std::chrono::milliseconds(wait), [this, key = st.key_] { expire(key); });
}

void HlsStore::expire(const StreamKey& key) {
  auto it = streams_.find(key);
  if (it == streams_.end()) return;
  HlsStreamState& st = *it->second;
  st.expiry_timer_.reset();
  const int64_t now = timers_.now_ms();
  while (!st.segments_.empty() && st.segments_.front().retired && st.segments_.front().expire_ms <= now) {
    pop_retired(st);
  }
  schedule_expiry(st);
}

void HlsStore::pop_retired(HlsStreamState& st) {
  st.bytes_ -= st.segments_.front().data.size();
  st.segments_.pop_front();  // a response still sending it holds its own reference
  // An init section no held segment needs any more goes too (the current one stays).
  const uint64_t oldest = st.segments_.empty() ? st.init_id_ : st.segments_.front().init_id;
  while (!st.inits_.empty() && st.inits_.begin()->first < std::min(oldest, st.init_id_))
    st.inits_.erase(st.inits_.begin());
  // So do the parts of segments no longer held.
  const uint64_t oldest_msn =
      st.segments_.empty() ? st.playlist_.next_sequence() : st.segments_.front().sequence;
  while (!st.parts_.empty() && st.parts_.front().msn < oldest_msn) {
    st.bytes_ -= st.parts_.front().data.size();
    st.parts_.pop_front();
  }
  --st.retired_;
  ++st.expired_;
}

void HlsStore::close(const StreamKey& key) {
  HlsStreamState* stp = find_mut(key);
  if (!stp || stp->producers_ == 0) return;
  HlsStreamState& st = *stp;
  if (--st.producers_ > 0) return;
  st.playlist_.end();  // §4.3.3.4: no more segments will be added (until a republish)
  st.playlist_.set_preload_hint({});
  st.playlist_cache_.reset();
  wake(key);  // held requests get the ended playlist (or give up on a part that will not come)
  const int64_t grace = grace_ms(st);
  st.grace_timer_ = timers_.schedule(std::chrono::milliseconds(grace), [this, key] { drop(key); });
  stream_log(st).debug("hls: {} ended at media sequence {}; state kept {} ms for a republish", st.key_text_,
                       st.playlist_.next_sequence(), grace);
}

void HlsStore::drop(const StreamKey& key) {
  auto it = streams_.find(key);
  if (it == streams_.end()) return;
  HlsStreamState& st = *it->second;
  st.grace_timer_.reset();
  if (st.producers_ > 0) return;
  cancel_timers(st);
  wake(key, /*gone=*/true);
  stream_log(st).debug("hls: {} dropped ({} segments, {} bytes freed)", st.key_text_, st.segments_.size(),
                       st.bytes_);
  if (continuity_) continuity_->dropped(st.key_text_);
  streams_.erase(it);
}

HlsStoreStats HlsStore::stats() const {
  HlsStoreStats s;
  s.streams = streams_.size();
  for (const auto& [k, st] : streams_) {
    if (st->live()) ++s.live_streams;
    s.segments += st->segments_.size();
    s.bytes += st->bytes_;
    s.segments_produced += st->produced_;
    s.segments_expired += st->expired_;
  }
  return s;
}

}  // namespace rill::media
