#include "rill/workers/worker_link.h"

#include <errno.h>
#include <event2/event.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "rill/workers/worker_endpoint.h"
#include "rill/protocol/error.h"

namespace rill::workers {

namespace {
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxReadPerEvent = 1024 * 1024;  // fairness with the other connections
}  // namespace

WorkerLink::WorkerLink(net::ServerContext& ctx, media::StreamKey key, const config::AppConfig& cfg,
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
  ctx_.log->debug("relay: {} link waiting for a publisher on any worker", key_);
  schedule_tick(std::chrono::milliseconds(0));
}

void WorkerLink::shutdown(const char* why) {
  if (stopped_) return;
  if (fd_ >= 0 || stream_) ctx_.log->info("relay: {} link closed ({}; {} frames, {} bytes in)", key_, why, frames_in_, bytes_in_);
  stopped_ = true;
  if (tick_timer_) {
    ctx_.timers->cancel(*tick_timer_);
    tick_timer_.reset();
  }
  if (read_ev_) {
    event_free(read_ev_);
    read_ev_ = nullptr;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  reader_.reset();
  detach();
}

// ---------------------------------------------------------------------------------------------

bool WorkerLink::attach() {
  media::Stream& s = ctx_.streams->get_or_create(skey_, cfg_);
  // HLS is produced once, by the owner: a relayed copy does not segment (docs/workers.md).
  if (!s.attach_publisher(this, media::PublishOrigin::WorkerLink)) {
    ctx_.log->debug("relay: {} has a local publisher; the link stays out", key_);
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
  const std::string path = worker_socket_path(opts_.runtime_dir, owner.slot);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) return false;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  // A Unix stream connect completes at once, or fails (EAGAIN: the owner's backlog is full).
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ctx_.log->debug("relay: {} cannot connect to worker {} at {}: {}", key_, owner.slot, path, std::strerror(errno));
    ::close(fd);
    return false;
  }
  protocol::LinkRequest req;
  req.kind = protocol::LinkRequest::Kind::Play;
  req.app = skey_.app;
  req.name = skey_.name;
  const std::string line = protocol::format_link_request(req);
  // A fresh socket's buffer takes a request line whole.
  if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    ctx_.log->debug("relay: {} cannot send the request to worker {}: {}", key_, owner.slot, std::strerror(errno));
    ::close(fd);
    return false;
  }
  fd_ = fd;
  protocol::LinkReaderLimits lim;
  lim.max_body = opts_.max_frame_body;
  reader_ = std::make_unique<protocol::LinkFrameReader>([this](protocol::LinkFrame&& f) { on_frame(std::move(f)); },
                                                         lim);
  read_ev_ = event_new(ctx_.base, fd_, EV_READ | EV_PERSIST, &WorkerLink::on_read_event, this);
  event_add(read_ev_, nullptr);
  owner_ = owner;
  state_ = State::Requested;
  requested_ms_ = ctx_.timers->now_ms();
  terminal_ = nullptr;
  ++connects_;
  ctx_.log->log(quiet_failures_ == 0 ? spdlog::level::info : spdlog::level::debug,
                "relay: {} link to worker {} (pid {}) opened", key_, owner.slot, owner.pid);
  return true;
}

void WorkerLink::disconnect(const char* why, bool poll_soon) {
  if (read_ev_) {
    event_free(read_ev_);
    read_ev_ = nullptr;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  reader_.reset();
  // Repeated failures (an owner that keeps refusing) are logged once, then at debug level.
  ctx_.log->log(quiet_failures_++ == 0 ? spdlog::level::info : spdlog::level::debug,
                "relay: {} link to worker {} lost: {}; waiting for a publisher", key_, owner_slot(), why);
  owner_.reset();
  state_ = State::Waiting;
  detach();  // players get UnpublishNotify and wait, as for a local publisher that left
  if (poll_soon) schedule_tick(std::chrono::milliseconds(0));
}

// ---------------------------------------------------------------------------------------------

void WorkerLink::on_read_event(int, short, void* arg) { static_cast<WorkerLink*>(arg)->handle_readable(); }

void WorkerLink::handle_readable() {
  uint8_t buf[kReadChunk];
  size_t total = 0;
  while (fd_ >= 0 && total < kMaxReadPerEvent) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n > 0) {
      total += static_cast<size_t>(n);
      bytes_in_ += static_cast<uint64_t>(n);
      try {
        reader_->feed({buf, static_cast<size_t>(n)});
      } catch (const protocol::ProtocolError& e) {
        ctx_.log->warn("relay: {} malformed data from worker {}: {}", key_, owner_slot(), e.what());
        disconnect("malformed frame", true);
        return;
      }
      if (terminal_) {
        disconnect(terminal_, true);
        return;
      }
      if (static_cast<size_t>(n) < sizeof buf) return;
      continue;
    }
    if (n == 0) {
      disconnect("connection closed by the owner", true);
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    disconnect(std::strerror(errno), true);
    return;
  }
}

void WorkerLink::on_frame(protocol::LinkFrame&& f) {
  using protocol::LinkFrameType;
  if (terminal_) return;
  switch (f.header.type) {
    case LinkFrameType::Publish:
      if (state_ == State::Live) {
        terminal_ = "second Publish frame";
        return;
      }
      state_ = State::Live;
      quiet_failures_ = 0;
      if (!stream_ && !attach()) terminal_ = "a local publisher holds the stream";
      return;
    case LinkFrameType::Audio:
    case LinkFrameType::Video:
    case LinkFrameType::Data:
      if (state_ != State::Live) {
        terminal_ = "media before Publish";
        return;
      }
      ++frames_in_;
      if (stream_) stream_->publish(static_cast<media::MediaType>(f.header.type), f.header.timestamp, std::move(f.body));
      return;
    case LinkFrameType::Unpublish:
      terminal_ = "the publisher left";
      return;
    case LinkFrameType::End:
      terminal_ = "the stream ended";
      return;
    case LinkFrameType::Error:
      ctx_.log->info("relay: {} worker {} refused: {}", key_, owner_slot(), f.body.get() ? std::string(f.body->view()) : "");
      terminal_ = "refused by the owner";
      return;
    case LinkFrameType::HlsObject:
      terminal_ = "unexpected HLS object";
      return;
  }
}

// ---------------------------------------------------------------------------------------------

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
  if (state_ == State::Waiting && subs > 0 && opts_.table) {
    auto o = opts_.table->lookup(key_);
    // An owner in our own slot with another pid is an older generation draining after a reload:
    // its socket path is ours now; it releases the stream shortly.
    if (o && o->pid != opts_.self_pid && o->slot != opts_.self_slot && now - last_connect_ms_ >= opts_.poll_interval.count() &&
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
