#include "rill/cluster/push_output.h"

#include "rill/config/cluster_config.h"
#include "rill/protocol/rtmp_message.h"

namespace rill::cluster {

namespace {
uint8_t message_type(media::MediaType t) {
  switch (t) {
    case media::MediaType::Audio: return protocol::msg_type::Audio;
    case media::MediaType::Video: return protocol::msg_type::Video;
    default: return protocol::msg_type::DataAmf0;
  }
}
}  // namespace

PushOutput::PushOutput(net::WorkerCore& ctx, media::Stream& stream, PushOptions opts, std::shared_ptr<PushSet> set)
    : ctx_(ctx), stream_(stream), opts_(std::move(opts)), set_(std::move(set)) {
  name_ = std::string(to_string(opts_.kind)) + " " + (opts_.targets.empty() ? "" : url_of(0));
  if (set_) set_->insert(this);
}

PushOutput::~PushOutput() {
  if (retry_timer_) ctx_.timers->cancel(*retry_timer_);
  if (upstream_) upstream_->close();
  if (set_) set_->erase(this);
}

std::string PushOutput::url_of(size_t i) const { return config::stream_url(opts_.targets[i], stream_.name()); }

RelayInfo PushOutput::info() const {
  return describe_relay(opts_.id, opts_.kind, stream_.app(), stream_.name(),
                        opts_.targets.empty() ? std::string() : url_of(current_), progress_,
                        upstream_ ? upstream_->bytes_out() : 0);
}

void PushOutput::on_start(const media::PublishSession&) {
  progress_.since_ms = ctx_.timers->now_ms();
  // Later, not now: the publisher's hop count is set once its publish is admitted.
  retry_timer_ = ctx_.timers->schedule(std::chrono::milliseconds(0), [this] {
    retry_timer_.reset();
    connect();
  });
}

void PushOutput::connect() {
  if (stopped_ || opts_.targets.empty()) return;
  const uint32_t hops = stream_.relay_hops() + 1;
  if (hops > kMaxRelayHops) {
    progress_.state = RelayState::Closed;
    stream_log().warn("relay {}: {} {} not forwarded: it already crossed {} servers (loop?)", opts_.id,
                      to_string(opts_.kind), stream_.key_text(), hops - 1);
    return;
  }
  UpstreamTarget t = relay_target(opts_.targets[current_], stream_.name(), protocol::RtmpClientRole::Publish,
                                  opts_.connect_timeout_ms, hops);
  if (upstream_) progress_.bytes += upstream_->bytes_out();
  RtmpUpstream::retire(*ctx_.timers, std::move(upstream_));
  progress_.state = RelayState::Connecting;
  progress_.since_ms = ctx_.timers->now_ms();
  synced_ = false;
  stream_log().info("relay {}: {} {} connecting to {}", opts_.id, to_string(opts_.kind), stream_.key_text(),
                    url_of(current_));
  upstream_ = std::make_unique<RtmpUpstream>(ctx_, std::move(t), *this);
  upstream_->start();
}

void PushOutput::on_upstream_up() {
  if (ever_up_) ++progress_.reconnects;
  ever_up_ = true;
  backoff_ms_ = 0;
  tried_in_round_ = 0;
  progress_.state = RelayState::Up;
  progress_.since_ms = ctx_.timers->now_ms();
  stream_log().info("relay {}: {} {} up to {}", opts_.id, to_string(opts_.kind), stream_.key_text(),
                    url_of(current_));
  // Metadata, sequence headers and the GOP since the last keyframe: the target starts decodable.
  wait_key_ = false;
  stream_.gop_cache().replay([this](const media::FramePtr& f) { send(f); });
  synced_ = true;
}

// The next target at once (forward: the next origin); after a full round, back-off.
void PushOutput::on_upstream_down(const std::string& why) {
  if (stopped_) return;
  stream_log().warn("relay {}: {} {}: {} failed ({})", opts_.id, to_string(opts_.kind), stream_.key_text(),
                    url_of(current_), why);
  synced_ = false;
  current_ = (current_ + 1) % opts_.targets.size();
  if (++tried_in_round_ < opts_.targets.size()) return connect();
  tried_in_round_ = 0;
  current_ = 0;
  backoff_ms_ = backoff_ms_ == 0 ? opts_.reconnect_ms : std::min(backoff_ms_ * 2, opts_.reconnect_max_ms);
  progress_.state = RelayState::Retrying;
  progress_.since_ms = ctx_.timers->now_ms();
  stream_log().warn("relay {}: {} {}: retrying in {} ms", opts_.id, to_string(opts_.kind), stream_.key_text(),
                    backoff_ms_);
  retry_timer_ = ctx_.timers->schedule(std::chrono::milliseconds(backoff_ms_), [this] {
    retry_timer_.reset();
    connect();
  });
}

void PushOutput::on_frame(const media::FramePtr& frame) {
  if (synced_) send(frame);
}

void PushOutput::send(const media::FramePtr& f) {
  if (!upstream_) return;
  if (f->type == media::MediaType::Video && !f->sequence_header) {
    if (upstream_->queued_bytes() > opts_.max_queued_bytes) wait_key_ = true;
    if (wait_key_ && !f->keyframe) return;
    wait_key_ = false;
  } else if (f->type == media::MediaType::Audio && !f->sequence_header &&
             upstream_->queued_bytes() > opts_.max_queued_bytes) {
    return;
  }
  upstream_->send_media(message_type(f->type), f->timestamp, f->payload);
}

void PushOutput::on_stop(const media::PublishSession&) { cancel(); }

void PushOutput::cancel() {
  if (stopped_) return;
  stopped_ = true;
  progress_.state = RelayState::Closed;
  if (retry_timer_) ctx_.timers->cancel(*retry_timer_);
  retry_timer_.reset();
  if (upstream_) progress_.bytes += upstream_->bytes_out();
  RtmpUpstream::retire(*ctx_.timers, std::move(upstream_));
  stream_log().info("relay {}: {} {} closed", opts_.id, to_string(opts_.kind), stream_.key_text());
}

}  // namespace rill::cluster
