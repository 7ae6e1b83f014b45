#include "rill/media/stream.h"

#include <algorithm>
#include <chrono>

#include "rill/core/buffer_pool.h"
#include "rill/media/rendition_group.h"
#include "rill/protocol/error.h"
#include "rill/protocol/flv_multitrack.h"
#include "rill/protocol/flv_tag.h"

namespace rill::media {

namespace {
const char* type_name(MediaType t) {
  switch (t) {
    case MediaType::Audio:
      return "audio";
    case MediaType::Video:
      return "video";
    case MediaType::Data:
      return "data";
  }
  return "?";
}

// a is later than b on a 32-bit wrapping timeline.
bool later(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) > 0; }

// A rendition of a group (hls.variants) keeps its publisher's clock: the group's renditions are
// cut at the same media times only if each keeps the timestamps its encoder (or a transcoder
// copying its source's timestamps) gave it, which a rebase onto 0 at publish would lose.
bool keeps_publisher_clock(const StreamKey& key, const config::AppConfig& cfg) {
  return is_rendition(key.name, cfg.hls.variant_suffixes);
}
}  // namespace

// While any callback loop runs, subscribers_ slots are nulled instead of erased and releasing
// the stream is deferred; the outermost scope compacts the vector when it ends.
class Stream::DispatchScope {
 public:
  explicit DispatchScope(Stream& s) : s_(s), prev_(s.dispatching_) { s_.dispatching_ = true; }
  ~DispatchScope() {
    s_.dispatching_ = prev_;
    if (!prev_) s_.compact();
  }
  DispatchScope(const DispatchScope&) = delete;
  DispatchScope& operator=(const DispatchScope&) = delete;

 private:
  Stream& s_;
  bool prev_;
};

Stream::Stream(StreamRegistry& registry, StreamKey key, const config::AppConfig& cfg)
    : registry_(registry),
      key_(std::move(key)),
      key_text_(key_.str()),
      cfg_(cfg),
      gop_(cfg.gop_cache, cfg.gop_cache_max_bytes, cfg.gop_cache_max_frames) {}

Stream::~Stream() {
  if (publisher_) stop_outputs();  // the registry is going away with the publisher still there
  TimerQueue& t = registry_.timers();
  if (idle_timer_) t.cancel(*idle_timer_);
  if (release_timer_) t.cancel(*release_timer_);
  for (auto& w : waiters_) t.cancel(w.second);
}

// ---------------------------------------------------------------------------------------------
// subscribers bookkeeping

size_t Stream::index_of(const Subscriber* s) const {
  if (!s) return subscribers_.size();
  auto it = std::find(subscribers_.begin(), subscribers_.end(), s);
  return static_cast<size_t>(it - subscribers_.begin());
}

core::StreamLog Stream::log() const { return {registry_.log(), key_text_}; }

void Stream::detach_at(size_t i) {
  if (dispatching_) {
    subscribers_[i] = nullptr;
    ++removed_pending_;
  } else {
    // Order among subscribers carries no meaning: swap with the last, O(1).
    subscribers_[i] = subscribers_.back();
    subscribers_.pop_back();
  }
}

void Stream::compact() {
  if (removed_pending_ == 0) return;
  std::erase(subscribers_, nullptr);
  removed_pending_ = 0;
}

void Stream::cancel_wait(Subscriber* s) {
  for (size_t i = 0; i < waiters_.size(); ++i) {
    if (waiters_[i].first == s) {
      registry_.timers().cancel(waiters_[i].second);
      waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }
}

void Stream::maybe_release() {
  if (!publisher_ && subscriber_count() == 0 && !idle_timer_) registry_.release(this);
}

// ---------------------------------------------------------------------------------------------
// publishing

bool Stream::attach_publisher(const void* owner, PublishOrigin origin) {
  if (publisher_) return publisher_ == owner;
  publisher_ = owner;
  cancel_idle_and_waits();
  // Nothing stale survives a republish: the new publisher sends its own metadata and headers.
  relay_hops_ = 0;
  gop_.clear();
  info_.has_audio = info_.has_video = false;
  info_.video_codec_id = 0;
  info_.video_fourcc = 0;
  info_.audio_format = 0;
  tracks_.reset();
  audio_tracks_.reset();
  session_started_ = false;
  const bool republish = ever_published_;
  ever_published_ = true;
  log().info("publish start: {}{} ({} subscriber(s) waiting)", key_text_, republish ? " (republish)" : "",
             subscriber_count());
  start_outputs(origin);

  DispatchScope scope(*this);
  const size_t n = subscribers_.size();
  for (size_t i = 0; i < n; ++i) {
    if (Subscriber* s = subscribers_[i]) s->on_publish(*this);
  }
  return true;
}

uint32_t Stream::map_timestamp(uint32_t in) {
  if (!session_started_) {
    session_started_ = true;
    in_base_ = in;
    out_base_ = timeline_started_ ? last_out_ + 1 : 0;
    // A rendition's clock is kept unless it would go back (a publisher whose clock starts over).
    if ((!timeline_started_ || later(in, last_out_)) && keeps_publisher_clock(key_, cfg_)) out_base_ = in;
    timeline_started_ = true;
    session_max_in_ = in;
    session_span_ = 0;
  }
  // The publisher's deltas are kept (32-bit modular input). A frame behind the newest one
  // (audio/video interleaving) keeps its offset, except that nothing maps before the session's
  // first frame: that is what keeps the output from going back across a republish.
  const int32_t d = static_cast<int32_t>(in - session_max_in_);
  uint64_t pos = session_span_;
  if (d > 0) {
    session_max_in_ = in;
    session_span_ += static_cast<uint32_t>(d);
    pos = session_span_;
  } else {
    const uint64_t behind = static_cast<uint64_t>(-static_cast<int64_t>(d));
    pos = behind > session_span_ ? 0 : session_span_ - behind;
  }
  last_out_ = out_base_ + static_cast<uint32_t>(session_span_);
  return out_base_ + static_cast<uint32_t>(pos);
}

void Stream::publish(MediaType type, uint32_t timestamp, BufferRef payload) {
  if (!publisher_) return;
  ++info_.frames_in;
  info_.bytes_in += payload.size();

  // The frame from the pool its payload came from (a publisher's ingest), and so freed as cheaply.
  BufferPool* pool = payload ? payload->pool() : nullptr;
  auto f = std::allocate_shared<MediaFrame>(BufferPoolAllocator<MediaFrame>(pool));
  f->type = type;
  const std::span<const uint8_t> body = payload.span();
  std::vector<std::shared_ptr<MediaFrame>> tracks;  // a multitrack tag's tracks, re-framed
  bool multitrack = false;
  try {
    switch (type) {
      case MediaType::Video: {
        const protocol::VideoTagInfo vi = protocol::parse_video_tag(body);
        set_tag_facts(*f, vi);  // outputs read the facts, never the header again
        info_.has_video = true;
        if (vi.codec_id) info_.video_codec_id = vi.codec_id;
        if (vi.fourcc) info_.video_fourcc = vi.fourcc;
        multitrack = vi.is_multitrack;
        break;
      }
      case MediaType::Audio: {
        const protocol::AudioTagInfo ai = protocol::parse_audio_tag(body);
        set_tag_facts(*f, ai);
        info_.has_audio = true;
        info_.audio_format = ai.sound_format;
        multitrack = ai.is_multitrack;
        break;
      }
      case MediaType::Data: {
        if (!protocol::is_metadata(body)) return;  // other script data is not forwarded
        const size_t off = protocol::set_data_frame_offset(body);
        f->metadata = true;
        f->payload = off == 0 ? std::move(payload) : SharedBuffer::copy_of(body.subspan(off));
        break;
      }
      default:
        return;
    }
    if (multitrack) tracks = reframe_tracks(type, body, pool);
  } catch (const protocol::ProtocolError& e) {
    ++info_.frames_dropped;
    log().debug("{}: dropped malformed {} message ({} bytes, ts {}): {}", key_text_, type_name(type),
                body.size(), timestamp, e.what());
    return;
  }
  if (type != MediaType::Data) {
    f->payload = std::move(payload);
    if (multitrack) {
      f->view = FrameView::Multitrack;
      f->track = tracks.front()->track;
    } else {
      tracks_.set(0);
      if (type == MediaType::Audio) audio_tracks_.set(0);
    }
  }

  // Configuration is not media time: a rendition's session starts at its first media frame, so
  // that headers a transcoder sends at 0 before media at its source's times do not set the clock.
  if (!session_started_ && (f->sequence_header || f->metadata) && keeps_publisher_clock(key_, cfg_))
    f->timestamp = timeline_started_ ? last_out_ : timestamp;
  else
    f->timestamp = map_timestamp(timestamp);
  // Re-framed tracks first: track 0's keyframe starts the cached GOP, the tag as sent joins it.
  for (auto& t : tracks) {
    t->timestamp = f->timestamp;
    deliver(std::move(t));
  }
  deliver(std::move(f));
}

std::vector<std::shared_ptr<MediaFrame>> Stream::reframe_tracks(MediaType type, std::span<const uint8_t> body,
                                                                BufferPool* pool) {
  const bool video = type == MediaType::Video;
  const protocol::MultitrackTag tag =
      video ? protocol::parse_multitrack_video(body) : protocol::parse_multitrack_audio(body);
  std::vector<std::shared_ptr<MediaFrame>> out;
  out.reserve(tag.tracks.size());
  for (const protocol::TrackPayload& t : tag.tracks) {
    // Written once, straight into a buffer of the publisher's pool, like the tag it comes from.
    const protocol::SingleTrackPrefix prefix = protocol::single_track_prefix(tag, t);
    BufferRef payload = SharedBuffer::create(prefix.size + t.body.size(), pool);
    payload->append(prefix.bytes, prefix.size);
    payload->append(t.body);
    auto f = std::allocate_shared<MediaFrame>(BufferPoolAllocator<MediaFrame>(pool));
    f->type = type;
    f->view = FrameView::Reframed;
    f->track = t.track_id;
    f->payload = std::move(payload);
    if (video) {
      set_tag_facts(*f, protocol::parse_video_tag(f->payload.span()));
    } else {
      set_tag_facts(*f, protocol::parse_audio_tag(f->payload.span()));
    }
    tracks_.set(t.track_id);
    if (!video) audio_tracks_.set(t.track_id);
    out.push_back(std::move(f));
  }
  return out;
}

void Stream::deliver(const FramePtr& frame) {
  gop_.add(frame);
  if (GopCache::is_track0(*frame)) {
    for (const auto& o : outputs_) o->on_frame(frame);
  } else if (frame->view == FrameView::Reframed) {
    for (const auto& o : outputs_) o->on_track_frame(frame);
  }
  fan_out(frame);
}

bool Stream::add_output(std::unique_ptr<StreamOutput> output) {
  if (!publisher_ || !output) return false;
  log().info("{}: output added: {}", key_text_, output->name());
  output->on_start(PublishSession{*this, origin_});
  outputs_.push_back(std::move(output));
  return true;
}

void Stream::start_outputs(PublishOrigin origin) {
  origin_ = origin;
  outputs_ = registry_.build_outputs(*this, origin);
  if (outputs_.empty()) return;
  std::string names;
  for (const auto& o : outputs_) names += (names.empty() ? "" : ", ") + std::string(o->name());
  log().info("{}: {} outputs: {}", key_text_, to_string(origin), names);
  const PublishSession session{*this, origin_};
  for (const auto& o : outputs_) o->on_start(session);
}

void Stream::stop_outputs() {
  StreamOutputs outputs = std::move(outputs_);
  outputs_.clear();
  const PublishSession session{*this, origin_};
  for (const auto& o : outputs) o->on_stop(session);
}  // destroyed here

void Stream::fan_out(const FramePtr& f) {
  DispatchScope scope(*this);
  // Subscribers added during the loop (index >= n) already got this frame from the replay.
  const size_t n = subscribers_.size();
  for (size_t i = 0; i < n; ++i) {
    Subscriber* s = subscribers_[i];
    if (s && s->track_selection().accepts(*f)) s->on_frame(f);
  }
}

void Stream::detach_publisher(const void* owner) {
  if (!publisher_ || publisher_ != owner) return;
  publisher_ = nullptr;
  session_started_ = false;
  stop_outputs();  // e.g. HLS ends the last segment and the playlist; its store keeps them
  log().info("publish stop: {} ({} frames, {} bytes in; {} subscriber(s) left)", key_text_, info_.frames_in,
             info_.bytes_in, subscriber_count());
  {
    DispatchScope scope(*this);
    const size_t n = subscribers_.size();
    for (size_t i = 0; i < n; ++i) {
      if (Subscriber* s = subscribers_[i]) s->on_unpublish(*this);
    }
  }
  start_idle_timer();
  maybe_release();
}

void Stream::start_idle_timer() {
  // Only worth waiting while somebody waits for the publisher to come back.
  if (publisher_ || idle_timer_ || subscriber_count() == 0) return;
  idle_timer_ = registry_.timers().schedule(cfg_.publisher_idle_timeout, [this] {
    idle_timer_.reset();
    if (publisher_) return;
    end_stream();  // may destroy *this
  });
}

// The idle wait for a returning publisher and the players' play_wait timers: a publisher came,
// or the stream ends.
void Stream::cancel_idle_and_waits() {
  TimerQueue& t = registry_.timers();
  if (idle_timer_) {
    t.cancel(*idle_timer_);
    idle_timer_.reset();
  }
  for (auto& w : waiters_) t.cancel(w.second);
  waiters_.clear();
}

void Stream::end_stream() {
  cancel_idle_and_waits();
  log().info("stream end: {} ({} subscriber(s) detached)", key_text_, subscriber_count());
  {
    DispatchScope scope(*this);
    const size_t n = subscribers_.size();
    for (size_t i = 0; i < n; ++i) {
      Subscriber* s = subscribers_[i];
      if (!s) continue;
      subscribers_[i] = nullptr;  // detached before it hears of it
      ++removed_pending_;
      s->on_stream_end(*this);
    }
  }
  maybe_release();
}

// ---------------------------------------------------------------------------------------------
// subscribing

void Stream::add_subscriber(Subscriber* s) {
  if (!s || index_of(s) != subscribers_.size()) return;
  subscribers_.push_back(s);
  {
    DispatchScope scope(*this);
    const size_t idx = subscribers_.size() - 1;
    auto attached = [&] { return idx < subscribers_.size() && subscribers_[idx] == s; };
    const TrackSelection sel = s->track_selection();
    auto send = [&](const FramePtr& f) {
      if (f && attached() && sel.accepts(*f)) s->on_frame(f);
    };
    s->on_gop_replay(true);
    send(gop_.metadata());
    send(gop_.video_header());
    send(gop_.audio_header());
    for (size_t i = 0; i < gop_.track_headers().size() && attached(); ++i) send(gop_.track_headers()[i]);
    // The cached GOP starts at a keyframe of track 0; another track starts at its own.
    bool wait_keyframe = !sel.is_all() && sel.track() != 0;
    const auto& frames = gop_.gop();
    for (size_t i = 0; i < frames.size() && attached(); ++i) {
      FramePtr f = frames[i];
      if (wait_keyframe && f->type == MediaType::Video && sel.accepts(*f)) {
        if (!f->keyframe) continue;
        wait_keyframe = false;
      }
      send(f);
    }
    if (attached()) s->on_gop_replay(false);
  }
  if (!publisher_ && cfg_.play_wait.count() > 0 && index_of(s) != subscribers_.size()) {
    const TimerId id = registry_.timers().schedule(cfg_.play_wait, [this, s] {
      for (size_t i = 0; i < waiters_.size(); ++i) {
        if (waiters_[i].first == s) {
          waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
      end_subscriber(s);  // may destroy *this
    });
    waiters_.emplace_back(s, id);
  }
  // A subscriber that left again during the replay was removed while dispatching, so releasing
  // an emptied stream was deferred: the caller may still use the stream after this returns.
}

bool Stream::watched() const {
  for (const Subscriber* s : subscribers_) {
    if (s && s->watched()) return true;
  }
  return false;
}

void Stream::end_subscriber(Subscriber* s) {
  if (publisher_) return;
  const size_t i = index_of(s);
  if (i == subscribers_.size()) return;
  log().info("{}: no publisher after play_wait {} ms, ending a waiting subscriber", key_text_,
             cfg_.play_wait.count());
  detach_at(i);
  {
    DispatchScope scope(*this);
    s->on_stream_end(*this);
  }
  maybe_release();
}

void Stream::remove_subscriber(Subscriber* s) {
  const size_t i = index_of(s);
  if (i == subscribers_.size()) return;
  detach_at(i);
  cancel_wait(s);
  if (!publisher_ && subscriber_count() == 0 && idle_timer_) {
    // Nobody is left to wait for the publisher to come back.
    registry_.timers().cancel(*idle_timer_);
    idle_timer_.reset();
  }
  maybe_release();
}

}  // namespace rill::media
