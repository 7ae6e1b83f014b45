#include "rill/workers/worker_link_session.h"

#include "rill/media/hls_store.h"
#include "rill/media/stream_key.h"
#include "rill/protocol/error.h"
#include "rill/protocol/worker_link_note.h"
#include "rill/workers/stream_locator.h"
#include "rill/workers/worker_details.h"
#include "rill/workers/worker_stats.h"

namespace rill::workers {

namespace {
constexpr std::chrono::milliseconds kRequestTimeout{5000};

uint8_t frame_flags(const media::MediaFrame& f) {
  uint8_t flags = 0;
  if (f.keyframe) flags |= protocol::link_flag::Keyframe;
  if (f.sequence_header) flags |= protocol::link_flag::SequenceHeader;
  if (f.metadata) flags |= protocol::link_flag::Metadata;
  return flags;
}
}  // namespace

WorkerLinkSession::WorkerLinkSession(net::WorkerCore& ctx, const StreamLocator* locator,
                                     WorkerDetails& details, std::unique_ptr<net::Connection> conn)
    : net::Session(net::SessionProtocol::WorkerLink),
      ctx_(ctx),
      locator_(locator),
      details_(details),
      conn_(std::move(conn)) {}

WorkerLinkSession::~WorkerLinkSession() {
  if (!closed_) close("destroyed");
}

void WorkerLinkSession::start() {
  since_ms_ = ctx_.timers->now_ms();
  request_timer_ = ctx_.timers->schedule(kRequestTimeout, [this] {
    request_timer_.reset();
    ctx_.log->warn("worker link: no request within {} ms, closing", kRequestTimeout.count());
    close("request timeout");
  });
  conn_->start(*this);
}

void WorkerLinkSession::close(const char* reason) {
  if (closed_) return;
  closed_ = true;
  if (hls_wait_) ctx_.streams->hls().cancel_wait(hls_wait_);  // a held LL-HLS request
  hls_wait_ = 0;
  if (stream_) {
    ctx_.log->info("worker link: sending {} to another worker ended ({}): {} frames, {} bytes, {} dropped", key_,
                   reason, frames_out_, conn_->bytes_out(), conn_->queue().frames_dropped());
  } else {
    ctx_.log->debug("worker link: connection closed ({})", reason);
  }
  stop_subscription();
  gatherer_.reset();
  if (request_timer_) ctx_.timers->cancel(*request_timer_);
  request_timer_.reset();
  conn_->close(reason);
  ctx_.sessions->retire(this);
}

net::SessionInfo WorkerLinkSession::describe() const {
  net::SessionInfo i;
  i.id = id();
  i.kind = net::SessionKind::WorkerLink;
  i.protocol = net::session_protocol_name(protocol());
  i.peer = conn_->peer();
  if (stream_) i.stream = key_;  // a sender; STATS and HLS answers name no stream
  i.since_ms = since_ms_;
  i.bytes_in = conn_->bytes_in();
  i.bytes_out = conn_->bytes_out();
  i.queued_bytes = conn_->queued_bytes();
  i.frames_out = frames_out_;
  i.dropped_frames = conn_->queue().frames_dropped();
  return i;
}

void WorkerLinkSession::stop_subscription() {
  if (media::Stream* s = std::exchange(stream_, nullptr)) s->remove_subscriber(this);
}

void WorkerLinkSession::on_close(const std::string& reason) { close(reason.c_str()); }

// ---------------------------------------------------------------- input

void WorkerLinkSession::on_data(std::span<const uint8_t> bytes) {
  const std::string_view in(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (have_request_) return read_notes(in);  // a sender's peer ends it by EOF
  line_.append(in);
  const size_t nl = line_.find('\n');
  if (nl == std::string::npos) {
    if (line_.size() > protocol::kLinkMaxRequestLine) {
      ctx_.log->warn("worker link: request line longer than {} bytes, closing", protocol::kLinkMaxRequestLine);
      close("bad request");
    }
    return;
  }
  have_request_ = true;
  if (request_timer_) ctx_.timers->cancel(*request_timer_);
  request_timer_.reset();
  const std::string line = line_.substr(0, nl);
  std::string rest = line_.substr(nl + 1);
  line_.clear();
  handle_request(line);
  if (!closed_ && !rest.empty()) read_notes(rest);
}

void WorkerLinkSession::read_notes(std::string_view bytes) {
  if (!stream_) return;  // only a PLAY link's asker sends notes; other answers ignore input
  line_.append(bytes);
  size_t nl;
  while (!closed_ && (nl = line_.find('\n')) != std::string::npos) {
    try {
      far_watching_ = protocol::parse_link_watching(std::string_view(line_).substr(0, nl));
    } catch (const protocol::ProtocolError& e) {
      ctx_.log->warn("worker link: {}: bad note from the asking worker: {}", key_, e.what());
      return close("bad note");
    }
    line_.erase(0, nl + 1);
  }
  if (line_.size() > protocol::kLinkMaxRequestLine) {
    ctx_.log->warn("worker link: {}: note line longer than {} bytes, closing", key_, protocol::kLinkMaxRequestLine);
    close("bad note");
  }
}

void WorkerLinkSession::handle_request(std::string_view line) {
  protocol::LinkRequest req;
  try {
    req = protocol::parse_link_request(line);
  } catch (const protocol::ProtocolError& e) {
    ctx_.log->warn("worker link: bad request: {}", e.what());
    return refuse(e.what());
  }
  std::visit([this](const auto& r) { serve(r); }, req);
}

void WorkerLinkSession::serve(const protocol::LinkPlayRequest& r) {
  std::string why;
  const auto key = media::StreamKey::make(r.app, r.name, &why);
  if (!key) return refuse("bad PLAY request: " + why);
  key_ = key->str();
  media::Stream* s = ctx_.streams->find(*key);
  if (!locator_ || !locator_->owns(key_) || !s || !s->has_publisher()) {
    ctx_.log->debug("worker link: {} requested, but this worker does not publish it", key_);
    return refuse("worker " + std::to_string(ctx_.worker_id) + " does not publish " + key_);
  }
  conn_->set_queue_limits(net::queue_limits_for(&s->app_config()));
  conn_->send(protocol::encode_link_message(protocol::LinkPublish{}));
  stream_ = s;
  ctx_.log->info("worker link: sending {} to another worker", key_);
  s->add_subscriber(this);  // replays metadata, sequence headers and the GOP cache
}

void WorkerLinkSession::serve(const protocol::LinkStatsRequest& r) {
  if (!r.all) return answer(protocol::LinkStats{details_.stats().dump()});
  gatherer_ = std::make_unique<StatsGatherer>(details_, [this](nlohmann::json all) {
    gatherer_.reset();
    answer(protocol::LinkStats{all.dump()});
  });
  gatherer_->start();
}

void WorkerLinkSession::serve(const protocol::LinkKickRequest& r) {
  answer(protocol::LinkStats{details_.kick_client(r.id).dump()});
}

void WorkerLinkSession::serve(const protocol::LinkDropRequest& r) {
  std::string why;
  const auto key = media::StreamKey::make(r.app, r.name, &why);
  if (!key) return refuse("bad DROP request: " + why);
  answer(protocol::LinkStats{details_.drop_publisher(key->str()).dump()});
}

void WorkerLinkSession::serve(const protocol::LinkRecordRequest& r) {
  std::string why;
  const auto key = media::StreamKey::make(r.app, r.name, &why);
  if (!key) return refuse("bad RECORD request: " + why);
  answer(protocol::LinkStats{details_.control_record(*key, r.start).dump()});
}

void WorkerLinkSession::serve(const protocol::LinkRelayAddRequest& r) {
  answer(protocol::LinkStats{details_.add_relay(r).dump()});
}

void WorkerLinkSession::serve(const protocol::LinkRelayDelRequest& r) {
  answer(protocol::LinkStats{details_.remove_relay(r.id).dump()});
}

void WorkerLinkSession::serve(const protocol::LinkHlsRequest& r) {
  // Answered from this worker's HlsStore whatever the ownership table says now: a worker asks the
  // owner it found in the table, or the worker that keeps the ended playlist (publisher gone,
  // within the grace), and what that worker has is the answer.
  std::string why;
  const auto key = media::StreamKey::make(r.app, r.name, &why);
  if (!key) return refuse("bad HLS request: " + why);
  media::HlsResponse res = media::respond_hls(ctx_.streams->hls().find(*key), *key, r.object);
  if (const auto* a = std::get_if<media::HlsAnswer>(&res)) return send_hls(*key, r.object, *a);
  // LL-HLS: a blocking reload or the hinted part is held here, by the owner (the asking worker
  // sends one request per distinct position, whatever number of its clients wait on it).
  const media::HlsHold& hold = std::get<media::HlsHold>(res);
  auto done = [this, k = *key, o = r.object](bool ok) {
    hls_wait_ = 0;
    send_hls(k, o, media::respond_hls_held(ctx_.streams->hls().find(k), k, o, ok));
  };
  hls_wait_ = ctx_.streams->hls().wait(*key, hold.target, hold.timeout_ms, std::move(done));
}

void WorkerLinkSession::send_hls(const media::StreamKey& key, const protocol::HlsObjectName& object,
                                 const media::HlsAnswer& a) {
  BufferRef body = a.ok() ? a.body : SharedBuffer::copy_of(std::string_view(a.reason).substr(0, 1024));
  ctx_.log->debug("worker link: HLS {} {} to another worker: {} ({} bytes)", key.str(),
                  protocol::format_hls_object(object), a.head.status, body.size());
  // Header and the store's shared buffer as two entries: the segment is not copied.
  conn_->send(protocol::link_hls_object_header(a.head, static_cast<uint32_t>(body.size())));
  if (body.size()) conn_->send(std::move(body));
  conn_->close_after_flush("answered");
}

void WorkerLinkSession::answer(const protocol::LinkMessage& m) {
  conn_->send(protocol::encode_link_message(m));
  conn_->close_after_flush("answered");
}

void WorkerLinkSession::refuse(const std::string& why) {
  conn_->send(protocol::encode_link_message(protocol::LinkError{why.substr(0, 1024)}));
  conn_->close_after_flush("refused");
}

// ---------------------------------------------------------------- media::Subscriber

void WorkerLinkSession::on_frame(const media::FramePtr& f) {
  if (closed_ || !conn_->is_open()) return;
  // Header and payload are two queue entries: the header carries the frame (and is what the
  // drop policy judges); the payload, shared with every other output, follows it as a control
  // entry so that it is never dropped apart from its header.
  media::OutputQueue& q = conn_->queue();
  const auto r = q.push_frame(
      *f, protocol::link_media_header(static_cast<protocol::LinkFrameType>(f->type), frame_flags(*f),
                                      f->timestamp, static_cast<uint32_t>(f->payload.size())));
  if (r == media::OutputQueue::PushResult::Overflow) {
    ctx_.log->warn("worker link: worker reading {} too slow ({} bytes, {} ms queued), disconnecting", key_,
                   q.bytes(), q.duration_ms());
    close("slow consumer");
    return;
  }
  if (r == media::OutputQueue::PushResult::Dropped) return;
  if (f->payload.size()) q.push_control(f->payload);
  ++frames_out_;
  conn_->flush_now();  // one link serves many players: holding here would add the merge hold twice
}

void WorkerLinkSession::on_unpublish(media::Stream&) {
  conn_->send(protocol::encode_link_message(protocol::LinkUnpublish{}));
  stop_subscription();
  conn_->close_after_flush("publisher left");
}

void WorkerLinkSession::on_stream_end(media::Stream&) {
  stream_ = nullptr;  // the hub detached us
  conn_->send(protocol::encode_link_message(protocol::LinkEnd{}));
  conn_->close_after_flush("stream ended");
}

}  // namespace rill::workers
