#include "rill/cluster/stream_pull.h"

#include "rill/config/cluster_config.h"
#include "rill/media/hls_store.h"
#include "rill/protocol/rtmp_message.h"
#include "rill/workers/stream_locator.h"

namespace rill::cluster {

namespace {
constexpr std::chrono::milliseconds kTick{200};
}  // namespace

StreamPull::StreamPull(net::WorkerCore& ctx, workers::StreamLocator& locator, OriginHealth& health,
                       PullOptions opts, std::function<void()> on_finished)
    : ctx_(ctx),
      locator_(locator),
      health_(health),
      opts_(std::move(opts)),
      on_finished_(std::move(on_finished)) {}

StreamPull::~StreamPull() {
  if (tick_timer_) ctx_.timers->cancel(*tick_timer_);
  if (retry_timer_) ctx_.timers->cancel(*retry_timer_);
  if (upstream_) upstream_->close();
  if (stream_) {
    media::Stream* s = stream_;
    stream_ = nullptr;
    s->detach_publisher(this);
    locator_.released(opts_.key);
  }
}

std::string StreamPull::url_of(size_t i) const { return config::stream_url(opts_.sources[i], opts_.key.name); }

void StreamPull::set_state(RelayState s) {
  if (s == progress_.state && progress_.since_ms != 0) return;
  progress_.state = s;
  progress_.since_ms = ctx_.timers->now_ms();
}

RelayInfo StreamPull::info() const {
  return describe_relay(opts_.id, opts_.on_demand ? RelayKind::EdgePull : RelayKind::Pull, opts_.key.app,
                        opts_.key.name, opts_.sources.empty() ? std::string() : url_of(current_), progress_,
                        upstream_ ? upstream_->bytes_in() : 0);
}

void StreamPull::start() {
  started_at_ = ctx_.timers->now_ms();
  set_state(RelayState::Connecting);
  last_active_at_ = ctx_.timers->now_ms();
  tick_timer_ = ctx_.timers->schedule(kTick, [this] { tick(); });
  if (claim()) new_round();
}

// One worker of the server pulls: the ownership table arbitrates. Another worker holding the
// stream (its pull, or a local publisher) serves our players through the worker link.
bool StreamPull::claim() {
  const auto origin = opts_.on_demand ? media::PublishOrigin::EdgePull : media::PublishOrigin::Pull;
  workers::PublishClaim c = locator_.claim_for_publish(opts_.key, *opts_.app, this, origin);
  if (c.result == workers::ClaimResult::Ok) {
    stream_ = c.stream;
    stream_->set_relay_hops(1);
    return true;
  }
  if (progress_.state != RelayState::Standby) {
    stream_log().info("relay {}: {} {} held elsewhere ({})", opts_.id, to_string(info().kind),
                      opts_.key.str(), c.reason);
  }
  if (opts_.on_demand) {
    held_elsewhere_ = c.result == workers::ClaimResult::Busy;
    answer_waiters(held_elsewhere_);
    stop("another worker has the stream");
  } else {
    set_state(RelayState::Standby);  // tick() claims again when the holder lets go
  }
  return false;
}

// Sources in configured order, those that failed recently at the end.
void StreamPull::new_round() {
  const int64_t now = ctx_.timers->now_ms();
  order_.clear();
  for (size_t i = 0; i < opts_.sources.size(); ++i) {
    if (!health_.recently_failed(url_of(i), now)) order_.push_back(i);
  }
  for (size_t i = 0; i < opts_.sources.size(); ++i) {
    if (health_.recently_failed(url_of(i), now)) order_.push_back(i);
  }
  next_ = 0;
  try_next();
}

void StreamPull::try_next() {
  if (next_ >= order_.size()) return round_failed();
  current_ = order_[next_++];
  UpstreamTarget t = relay_target(opts_.sources[current_], opts_.key.name, protocol::RtmpClientRole::Play,
                                  opts_.connect_timeout_ms, 1);
  if (upstream_) progress_.bytes += upstream_->bytes_in();
  RtmpUpstream::retire(*ctx_.timers, std::move(upstream_));
  set_state(RelayState::Connecting);
  stream_log().info("relay {}: {} {} connecting to {}", opts_.id, to_string(info().kind), opts_.key.str(),
                    url_of(current_));
  upstream_ = std::make_unique<RtmpUpstream>(ctx_, std::move(t), *this);
  upstream_->start();
}

void StreamPull::round_failed() {
  const int64_t waited = ctx_.timers->now_ms() - started_at_;
  const bool keep_waiting = waited + opts_.backoff_first_ms < opts_.app->play_wait.count();  // play_wait > a round
  if (opts_.on_demand && !ever_up_ && !keep_waiting) {
    stream_log().warn("relay {}: edge-pull {}: no origin has it", opts_.id, opts_.key.str());
    answer_waiters(false);
    return stop("no origin has the stream");
  }
  if (!keep_waiting) answer_waiters(false);  // new players: no origin has it now (the attached ones stay)
  backoff_ms_ = backoff_ms_ == 0 ? opts_.backoff_first_ms : std::min(backoff_ms_ * 2, opts_.backoff_max_ms);
  set_state(RelayState::Retrying);
  stream_log().warn("relay {}: {} {}: every source failed, next round in {} ms", opts_.id,
                    to_string(info().kind), opts_.key.str(), backoff_ms_);
  retry_timer_ = ctx_.timers->schedule(std::chrono::milliseconds(backoff_ms_), [this] {
    retry_timer_.reset();
    new_round();
  });
}

void StreamPull::on_upstream_up() {
  const int64_t now = ctx_.timers->now_ms();
  health_.succeeded(url_of(current_));
  if (ever_up_) ++progress_.reconnects;
  ever_up_ = true;
  backoff_ms_ = 0;
  last_media_at_ = now;
  last_active_at_ = now;
  rebase_.new_upstream();
  set_state(RelayState::Up);
  stream_log().info("relay {}: {} {} up from {}", opts_.id, to_string(info().kind), opts_.key.str(),
                    url_of(current_));
  answer_waiters(true);
}

void StreamPull::on_upstream_media(protocol::RtmpMessage&& m) {
  if (!stream_) return;
  const int64_t now = ctx_.timers->now_ms();
  last_media_at_ = now;
  switch (m.type_id) {
    case protocol::msg_type::Audio:
    case protocol::msg_type::Video:
      stream_->publish(m.type_id == protocol::msg_type::Audio ? media::MediaType::Audio : media::MediaType::Video,
                       rebase_.map(m.timestamp, now), std::move(m.payload));
      return;
    case protocol::msg_type::DataAmf0:
      // Metadata carries no time of its own worth following: it stays where the media is.
      stream_->publish(media::MediaType::Data, rebase_.last(), std::move(m.payload));
      return;
    default:
      return;
  }
}

void StreamPull::on_upstream_status(std::string_view code) {
  if (code != "NetStream.Play.UnpublishNotify" && code != "NetStream.Play.Stop") return;
  if (opts_.on_demand) return stop("the stream ended at " + url_of(current_));
  on_upstream_down("the stream ended at " + url_of(current_));
}

// A reset, EOF, refusal or timeout: the next source at once. From up, a new round starts from the
// first source (failover in configured order); the failed one is tried last for a while.
void StreamPull::on_upstream_down(const std::string& why) {
  if (finished_) return;
  health_.failed(url_of(current_), ctx_.timers->now_ms());
  const bool was_up = progress_.state == RelayState::Up;
  stream_log().warn("relay {}: {} {}: {} failed ({}){}", opts_.id, to_string(info().kind), opts_.key.str(),
                    url_of(current_), why, was_up ? ": failover" : "");
  if (was_up) return new_round();
  try_next();
}

void StreamPull::tick() {
  tick_timer_ = ctx_.timers->schedule(kTick, [this] { tick(); });
  const int64_t now = ctx_.timers->now_ms();
  if (progress_.state == RelayState::Standby) {
    if (claim()) new_round();
    return;
  }
  if (progress_.state == RelayState::Up && now - last_media_at_ > opts_.connect_timeout_ms) {
    RtmpUpstream::retire(*ctx_.timers, std::move(upstream_));
    return on_upstream_down("no media for " + std::to_string(opts_.connect_timeout_ms) + " ms");
  }
  if (!opts_.on_demand || !stream_) return;
  // A worker link counts only while the far worker has players (protocol/worker_link_note.h):
  // idle_close runs from the last player on any worker, not that worker's link grace later.
  if (stream_->watched() || !waiters_.empty()) last_active_at_ = now;
  // HLS viewers read the playlist here (this worker's HTTP, or another worker over the link).
  if (const media::HlsStreamState* hls = ctx_.streams->hls().find(opts_.key)) {
    if (hls->playlist_reads() != hls_reads_) last_active_at_ = now;
    hls_reads_ = hls->playlist_reads();
  }
  if (now - last_active_at_ >= opts_.idle_close_ms) stop("closed by idle: no player for " +
                                                      std::to_string(opts_.idle_close_ms) + " ms");
}

void StreamPull::touch() { last_active_at_ = ctx_.timers->now_ms(); }

void StreamPull::add_waiter(Found f) {
  if (progress_.state == RelayState::Up) return f(true);
  if (finished_) return f(held_elsewhere_);
  waiters_.push_back(std::move(f));
}

void StreamPull::answer_waiters(bool found) {
  std::vector<Found> w = std::move(waiters_);
  waiters_.clear();
  for (auto& f : w) f(found);
}

void StreamPull::stop(const std::string& why) {
  if (finished_) return;
  finished_ = true;
  set_state(RelayState::Closed);
  stream_log().info("relay {}: {} {} closed: {}", opts_.id, to_string(info().kind), opts_.key.str(), why);
  if (tick_timer_) ctx_.timers->cancel(*tick_timer_);
  tick_timer_.reset();
  if (retry_timer_) ctx_.timers->cancel(*retry_timer_);
  retry_timer_.reset();
  if (upstream_) progress_.bytes += upstream_->bytes_in();
  RtmpUpstream::retire(*ctx_.timers, std::move(upstream_));
  answer_waiters(false);
  if (stream_) {
    media::Stream* s = stream_;
    stream_ = nullptr;
    s->detach_publisher(this);  // players get UnpublishNotify; HLS ends its playlist
    locator_.released(opts_.key);
  }
  ctx_.timers->schedule(std::chrono::milliseconds(0), [cb = on_finished_] { cb(); });
}

}  // namespace rill::cluster
