#include "rill/workers/worker_link.h"

#include "rill/protocol/error.h"
#include "rill/protocol/worker_link_note.h"
#include "rill/workers/worker_endpoint.h"

namespace rill::workers {

WorkerLink::WorkerLink(net::WorkerCore& ctx, media::StreamKey key, const config::AppConfig& cfg,
                     WorkerLinkOptions opts, std::function<void(WorkerLink&)> on_idle)
    : ctx_(ctx),
      skey_(std::move(key)),
      key_(skey_.str()),
      cfg_(cfg),
      opts_(std::move(opts)),
      on_idle_(std::move(on_idle)) {}

WorkerLink::~WorkerLink() {
  if (!stopped_) shutdown("destroyed");
}

const char* WorkerLink::state_name() const {
  if (stopped_) return "closed";
  switch (state_) {
    case State::Waiting: return "waiting";
    case State::Requested: return "requested";
    case State::Live: return "live";
  }
  return "?";
}

size_t WorkerLink::local_subscribers() const {
  if (stream_) return stream_->subscriber_count();
  media::Stream* s = ctx_.streams->find(skey_);
  return s ? s->subscriber_count() : 0;
}

media::Stream* WorkerLink::start_attached(const OwnershipTable::Owner& owner) {
  if (stopped_) return nullptr;
  if (!stream_ && !attach()) return nullptr;
  if (state_ == State::Waiting && !connect_to(owner)) {
    detach();  // unreachable owner: nothing to play
    schedule_tick(opts_.poll_interval);
    return nullptr;
  }
  schedule_tick(opts_.poll_interval);
  return stream_;
}

void WorkerLink::start_waiting() {
  if (stopped_) return;
  ctx_.log->debug("worker link: {} link waiting for a publisher on any worker", key_);
  schedule_tick(std::chrono::milliseconds(0));
}

void WorkerLink::shutdown(const char* why) {
  if (stopped_) return;
  if (conn_ || stream_) ctx_.log->info("worker link: {} link closed ({}; {} frames, {} bytes in)", key_, why, frames_in_, bytes_in_);
  stopped_ = true;
  if (tick_timer_) {
    ctx_.timers->cancel(*tick_timer_);
    tick_timer_.reset();
  }
  conn_.reset();
  reader_.reset();
  detach();
}

// ---------------------------------------------------------------------------------------------

bool WorkerLink::attach() {
  media::Stream& s = ctx_.streams->get_or_create(skey_, cfg_);
  // HLS is produced once, by the owner: a relayed copy does not segment (docs/workers.md).
  if (!s.attach_publisher(this, media::PublishOrigin::WorkerLink)) {
    ctx_.log->debug("worker link: {} has a local publisher; the link stays out", key_);
    return false;
  }
  stream_ = &s;
  return true;
}

void WorkerLink::detach() {
  if (media::Stream* s = std::exchange(stream_, nullptr)) s->detach_publisher(this);  // may destroy s
}

bool WorkerLink::connect_to(const OwnershipTable::Owner& owner) {
  last_connect_ms_ = ctx_.timers->now_ms();
  std::string error;
  net::UniqueFd fd = net::connect_unix(worker_process_socket_path(opts_.runtime_dir, owner.slot, owner.pid), &error);
  if (!fd) {
    ctx_.log->debug("worker link: {} cannot reach worker {}: {}", key_, owner.slot, error);
    return false;
  }
  conn_ = std::make_unique<net::PlainConnection>(ctx_.base, *ctx_.flusher, std::move(fd),
                                                 "worker " + std::to_string(owner.slot));
  conn_->send(SharedBuffer::copy_of(std::string_view(protocol::format_link_request(protocol::LinkPlayRequest{skey_.app, skey_.name}))));
  protocol::LinkReaderLimits lim;
  lim.max_body = opts_.max_frame_body;
  reader_ = std::make_unique<protocol::LinkFrameReader>([this](protocol::LinkMessage&& m) { on_message(std::move(m)); },
                                                         lim);
  conn_->start(*this);
  owner_ = owner;
  told_watching_ = true;  // what the owner assumes of a new link
  state_ = State::Requested;
  requested_ms_ = ctx_.timers->now_ms();
  terminal_ = nullptr;
  ++connects_;
  ctx_.log->log(quiet_failures_ == 0 ? spdlog::level::info : spdlog::level::debug,
                "worker link: {} link to worker {} (pid {}) opened", key_, owner.slot, owner.pid);
  return true;
}

void WorkerLink::disconnect(const std::string& why, bool poll_soon) {
  conn_.reset();  // may be inside its callback: the connection allows it
  reader_.reset();
  // Repeated failures (an owner that keeps refusing) are logged once, then at debug level.
  ctx_.log->log(quiet_failures_++ == 0 ? spdlog::level::info : spdlog::level::debug,
                "worker link: {} link to worker {} lost: {}; waiting for a publisher", key_, owner_slot(), why);
  owner_.reset();
  state_ = State::Waiting;
  detach();  // players get UnpublishNotify and wait, as for a local publisher that left
  if (poll_soon) schedule_tick(std::chrono::milliseconds(0));
}

// ---------------------------------------------------------------------------------------------

void WorkerLink::on_data(std::span<const uint8_t> bytes) {
  bytes_in_ += bytes.size();
  try {
    reader_->feed(bytes);
  } catch (const protocol::ProtocolError& e) {
    ctx_.log->warn("worker link: {} malformed data from worker {}: {}", key_, owner_slot(), e.what());
    return disconnect("malformed frame", true);
  }
  if (terminal_) disconnect(terminal_, true);
}

void WorkerLink::on_close(const std::string& reason) {
  disconnect(reason == "peer closed" ? "connection closed by the owner" : reason, true);
}

void WorkerLink::on_message(protocol::LinkMessage&& m) {
  using namespace protocol;
  if (terminal_) return;
  if (auto* media = std::get_if<LinkMedia>(&m)) {
    if (state_ != State::Live) {
      terminal_ = "media before Publish";
      return;
    }
    ++frames_in_;
    if (stream_) stream_->publish(static_cast<media::MediaType>(media->type), media->timestamp, std::move(media->body));
  } else if (std::holds_alternative<LinkPublish>(m)) {
    if (state_ == State::Live) {
      terminal_ = "second Publish frame";
      return;
    }
    state_ = State::Live;
    quiet_failures_ = 0;
    if (!stream_ && !attach()) terminal_ = "a local publisher holds the stream";
  } else if (std::holds_alternative<LinkUnpublish>(m)) {
    terminal_ = "the publisher left";
  } else if (std::holds_alternative<LinkEnd>(m)) {
    terminal_ = "the stream ended";
  } else if (auto* error = std::get_if<LinkError>(&m)) {
    ctx_.log->info("worker link: {} worker {} refused: {}", key_, owner_slot(), error->reason);
    terminal_ = "refused by the owner";
  } else {
    terminal_ = "unexpected answer frame";
  }
}

// ---------------------------------------------------------------------------------------------

// The owner counts this link as a viewer only while a player here watches: tell it on change.
void WorkerLink::tell_watching(bool watching) {
  if (!conn_ || watching == told_watching_) return;
  told_watching_ = watching;
  conn_->send(SharedBuffer::copy_of(std::string_view(protocol::format_link_watching(watching))));
}

void WorkerLink::schedule_tick(std::chrono::milliseconds after) {
  if (stopped_) return;
  if (tick_timer_) ctx_.timers->cancel(*tick_timer_);
  tick_timer_ = ctx_.timers->schedule(after, [this] {
    tick_timer_.reset();
    tick();
  });
}

void WorkerLink::tick() {
  if (stopped_) return;
  const int64_t now = ctx_.timers->now_ms();
  const size_t subs = local_subscribers();
  if (subs == 0) {
    if (!idle_since_ms_) idle_since_ms_ = now;
    if (now - *idle_since_ms_ >= opts_.idle_grace.count()) {
      on_idle_(*this);  // the locator shuts us down; nothing more to do here
      return;
    }
  } else {
    idle_since_ms_.reset();
  }
  tell_watching(subs > 0);
  if (state_ == State::Waiting && subs > 0 && opts_.table) {
    auto o = opts_.table->lookup(key_);
    // An owner in our own slot with another pid is an older generation still serving its
    // publisher after a reload: reached by its pid's socket like any other owner.
    if (o && o->pid != opts_.self_pid && now - last_connect_ms_ >= opts_.poll_interval.count() &&
        !OwnershipTable::process_gone(o->pid)) {
      connect_to(*o);
    }
  }
  if (state_ == State::Requested && now - requested_ms_ > opts_.request_timeout.count()) {
    disconnect("no answer from the owner", false);
  }
  schedule_tick(opts_.poll_interval);
}

}  // namespace rill::workers
