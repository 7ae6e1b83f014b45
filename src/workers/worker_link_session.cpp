#include "rill/workers/worker_link_session.h"

#include <errno.h>
#include <event2/event.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

#include "rill/workers/worker_stats.h"
#include "rill/workers/stream_locator.h"
#include "rill/media/hls_store.h"
#include "rill/protocol/error.h"

namespace rill::workers {

namespace {
constexpr int kMaxIov = 64;
constexpr int64_t kRequestTimeoutMs = 5000;

uint8_t frame_flags(const media::MediaFrame& f) {
  uint8_t flags = 0;
  if (f.keyframe) flags |= protocol::link_flag::Keyframe;
  if (f.sequence_header) flags |= protocol::link_flag::SequenceHeader;
  if (f.metadata) flags |= protocol::link_flag::Metadata;
  return flags;
}
}  // namespace

WorkerLinkSession::WorkerLinkSession(net::ServerContext& ctx, int fd)
    : ctx_(ctx), fd_(fd), queue_(net::queue_limits_for(nullptr)) {}

WorkerLinkSession::~WorkerLinkSession() {
  if (!closed_) close("destroyed");
}

void WorkerLinkSession::start() {
  read_ev_ = event_new(ctx_.base, fd_, EV_READ | EV_PERSIST, &WorkerLinkSession::on_read_event, this);
  write_ev_ = event_new(ctx_.base, fd_, EV_WRITE | EV_PERSIST, &WorkerLinkSession::on_write_event, this);
  timeout_ev_ = event_new(ctx_.base, -1, 0, &WorkerLinkSession::on_timeout_event, this);
  event_add(read_ev_, nullptr);
  timeval tv{kRequestTimeoutMs / 1000, 0};
  event_add(timeout_ev_, &tv);
}

void WorkerLinkSession::close(const char* reason) {
  if (closed_) return;
  closed_ = true;
  if (stream_) {
    ctx_.log->info("relay: sending {} to another worker ended ({}): {} frames, {} bytes, {} dropped", key_, reason,
                   frames_out_, bytes_out_, queue_.frames_dropped());
  } else {
    ctx_.log->debug("relay: connection closed ({})", reason);
  }
  stop_subscription();
  gatherer_.reset();
  ctx_.flusher->forget(this);
  for (event** ev : {&read_ev_, &write_ev_, &timeout_ev_}) {
    if (*ev) {
      event_free(*ev);
      *ev = nullptr;
    }
  }
  queue_.clear();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  ctx_.sessions->retire(this);
}

void WorkerLinkSession::stop_subscription() {
  if (media::Stream* s = std::exchange(stream_, nullptr)) s->remove_subscriber(this);
}

void WorkerLinkSession::close_after_flush(const char* reason) {
  closing_after_flush_ = true;
  close_reason_ = reason;
  ctx_.flusher->request(this);
}

// ---------------------------------------------------------------- input

void WorkerLinkSession::on_timeout_event(int, short, void* arg) {
  auto* self = static_cast<WorkerLinkSession*>(arg);
  if (!self->have_request_) {
    self->ctx_.log->warn("relay: no request within {} ms, closing", kRequestTimeoutMs);
    self->close("request timeout");
  }
}

void WorkerLinkSession::on_read_event(int, short, void* arg) { static_cast<WorkerLinkSession*>(arg)->handle_readable(); }

void WorkerLinkSession::handle_readable() {
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n == 0) {
      close("peer closed");
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      close("read error");
      return;
    }
    if (have_request_) continue;  // nothing more is expected from the peer: ignored
    line_.append(buf, static_cast<size_t>(n));
    const size_t nl = line_.find('\n');
    if (nl == std::string::npos) {
      if (line_.size() > protocol::kLinkMaxRequestLine) {
        ctx_.log->warn("relay: request line longer than {} bytes, closing", protocol::kLinkMaxRequestLine);
        close("bad request");
        return;
      }
      continue;
    }
    have_request_ = true;
    if (timeout_ev_) event_del(timeout_ev_);
    protocol::LinkRequest req;
    try {
      req = protocol::parse_link_request(std::string_view(line_).substr(0, nl));
    } catch (const protocol::ProtocolError& e) {
      ctx_.log->warn("relay: bad request: {}", e.what());
      refuse(e.what());
      return;
    }
    line_.clear();
    handle_request(req);
    if (closed_) return;
  }
}

void WorkerLinkSession::handle_request(const protocol::LinkRequest& r) {
  using Kind = protocol::LinkRequest::Kind;
  switch (r.kind) {
    case Kind::Play:
      return serve_play(r);
    case Kind::Stats:
      return reply_text(worker_stats(ctx_).dump() + "\n");
    case Kind::StatsAll:
      gatherer_ = std::make_unique<StatsGatherer>(ctx_, [this](nlohmann::json all) { reply_text(all.dump() + "\n"); });
      gatherer_->start();
      return;
    case Kind::Hls:
      return serve_hls(r);
  }
}

void WorkerLinkSession::serve_play(const protocol::LinkRequest& r) {
  key_ = r.key();
  std::string why;
  const auto skey = media::StreamKey::make(r.app, r.name, &why);
  if (!skey) return refuse("bad PLAY request: " + why);
  media::Stream* s = ctx_.streams->find(*skey);
  if (!ctx_.locator || !ctx_.locator->owns(key_) || !s || !s->has_publisher()) {
    ctx_.log->debug("relay: {} requested, but this worker does not publish it", key_);
    return refuse("worker " + std::to_string(ctx_.worker_id) + " does not publish " + key_);
  }
  queue_ = media::OutputQueue(net::queue_limits_for(&s->app_config()));
  push(protocol::link_control_frame(protocol::LinkFrameType::Publish));
  stream_ = s;
  ctx_.log->info("relay: sending {} to another worker", key_);
  s->add_subscriber(this);  // replays metadata, sequence headers and the GOP cache
}

void WorkerLinkSession::serve_hls(const protocol::LinkRequest& r) {
  // Answered from this worker's HlsStore whatever the ownership table says now: a worker asks the
  // owner it found in the table, and an ended playlist (publisher gone, within the grace) is
  // still what that owner has.
  const auto object = protocol::parse_hls_object(r.object);  // validated by the parser
  const media::HlsStreamState* st = ctx_.streams->hls().find(r.app, r.name);
  if (!object || !st) return refuse("stream " + r.key() + " has no HLS playlist");
  BufferRef body;
  uint32_t max_age = 0;
  if (object->playlist) {
    if (!st->has_segments()) return refuse("stream " + r.key() + " has no HLS segment yet");
    body = st->playlist_text();
  } else {
    const media::HlsSegment* seg = st->segment(object->sequence);
    if (!seg) {
      return refuse("segment " + std::to_string(object->sequence) + " of " + r.key() +
                    " is not available (expired or not produced)");
    }
    body = seg->data;
    max_age = st->segment_max_age_s();
  }
  ctx_.log->debug("relay: HLS {} {} to another worker ({} bytes)", r.key(), r.object, body.size());
  // Header and the store's shared buffer as two entries: the segment is not copied.
  push(protocol::link_hls_object_header(max_age, static_cast<uint32_t>(body.size())));
  if (body.size()) push(std::move(body));
  close_after_flush("answered");
}

void WorkerLinkSession::reply_text(const std::string& text) {
  gatherer_.reset();
  push(SharedBuffer::copy_of(std::string_view(text)));
  close_after_flush("answered");
}

void WorkerLinkSession::refuse(const std::string& why) {
  push(protocol::link_control_frame(protocol::LinkFrameType::Error, why.substr(0, 1024)));
  close_after_flush("refused");
}

// ---------------------------------------------------------------- media::Subscriber

void WorkerLinkSession::on_frame(const media::FramePtr& f) {
  if (closed_ || closing_after_flush_) return;
  protocol::LinkFrameHeader h;
  h.type = static_cast<protocol::LinkFrameType>(f->type);
  h.flags = frame_flags(*f);
  h.timestamp = f->timestamp;
  h.length = static_cast<uint32_t>(f->payload.size());
  // Header and payload are two queue entries: the header carries the frame (and is what the
  // drop policy judges); the payload, shared with every other output, follows it as a control
  // entry so that it is never dropped apart from its header.
  auto r = queue_.push_frame(*f, protocol::link_header_buffer(h));
  if (r == media::OutputQueue::PushResult::Overflow) {
    ctx_.log->warn("relay: worker reading {} too slow ({} bytes, {} ms queued), disconnecting", key_, queue_.bytes(),
                   queue_.duration_ms());
    close("slow consumer");
    return;
  }
  if (r == media::OutputQueue::PushResult::Dropped) return;
  if (f->payload.size()) queue_.push_control(f->payload);
  ++frames_out_;
  ctx_.flusher->request(this);
}

void WorkerLinkSession::on_unpublish(media::Stream&) {
  push(protocol::link_control_frame(protocol::LinkFrameType::Unpublish));
  stop_subscription();
  close_after_flush("publisher left");
}

void WorkerLinkSession::on_stream_end(media::Stream&) {
  stream_ = nullptr;  // the hub detached us
  push(protocol::link_control_frame(protocol::LinkFrameType::End));
  close_after_flush("stream ended");
}

// ---------------------------------------------------------------- output

void WorkerLinkSession::push(BufferRef bytes) {
  if (closed_) return;
  queue_.push_control(std::move(bytes));
  ctx_.flusher->request(this);
}

void WorkerLinkSession::on_write_event(int, short, void* arg) { static_cast<WorkerLinkSession*>(arg)->flush(); }

void WorkerLinkSession::flush() {
  if (closed_) return;
  iovec iov[kMaxIov];
  while (!queue_.empty()) {
    size_t n = queue_.fill_iov(iov, kMaxIov);
    ssize_t w = ::writev(fd_, iov, static_cast<int>(n));
    if (w > 0) {
      queue_.consume(static_cast<size_t>(w));
      bytes_out_ += static_cast<uint64_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!write_armed_) {
        event_add(write_ev_, nullptr);
        write_armed_ = true;
      }
      return;
    }
    close(w < 0 && errno == EPIPE ? "peer closed" : "write error");
    return;
  }
  if (write_armed_) {
    event_del(write_ev_);
    write_armed_ = false;
  }
  if (closing_after_flush_) close(close_reason_.c_str());
}

}  // namespace rill::workers
