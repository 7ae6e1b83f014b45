#include "rtmp_client.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "rill/protocol/error.h"
#include "rill/protocol/flv_tag.h"
#include "rill/protocol/rtmp_message.h"

namespace rill::loadgen {

using namespace rill::protocol;

namespace {

RtmpClientOptions session_options(ThreadContext& ctx, const Url& url, RtmpClient::Role role) {
  const Options& opt = ctx.opt;
  RtmpClientOptions o;
  const bool publisher = role == RtmpClient::Role::Publisher;
  o.role = publisher ? RtmpClientRole::Publish : RtmpClientRole::Play;
  o.app = url.app;
  o.tc_url = url.tc_url();
  o.stream = url.stream;
  if (publisher) o.flash_ver = "FMLE/3.0 (compatible; rill-bench)";
  o.connect_timeout_ms = static_cast<int64_t>(opt.setup_timeout_s * 1000);
  o.out_chunk_size = RtmpClient::kOutChunkSize;
  o.media_prefix = publisher ? 0 : RtmpClient::kHeadBytes;
  o.handshake_mac = &ctx.handshake_mac;
  return o;
}

// The report's error kinds for a failed session (the names rill-bench has always used).
std::string error_kind(const RtmpClientFailure& f) {
  using K = RtmpClientFailure::Kind;
  switch (f.kind) {
    case K::Refused:
      return "rtmp_error:" + (f.code.empty() ? std::string("unknown") : f.code);
    case K::StatusError:
      return "rtmp:" + f.code;
    case K::Timeout:
      return "setup_timeout";
    case K::PeerClosed:
      return "eof";
    default:
      return "protocol";
  }
}

}  // namespace

RtmpClient::RtmpClient(ThreadContext& ctx, ClientRecord& rec, const Endpoint& ep, const Url& url, Role role,
                       std::shared_ptr<const FlvSource> source)
    : Client(ctx, rec, ep),
      role_(role),
      session_(session_options(ctx, url, role), *this),
      source_(std::move(source)) {
  rec_.kind = role == Role::Player ? ClientRecord::Kind::RtmpPlayer : ClientRecord::Kind::Publisher;
}

RtmpClient::~RtmpClient() = default;

// ---------------------------------------------------------------- socket side

void RtmpClient::on_connected() {
  // The setup timeout counts from connect(), so the session's clock starts there too.
  session_.start(rec_.start_ns / kNsPerMs);
  flush_session();
}

void RtmpClient::on_data(std::span<const uint8_t> bytes) {
  try {
    session_.feed(bytes);              // protocol errors become a Failed state, reported by on_state
  } catch (const std::exception& e) {  // anything unexpected from our own callbacks
    fail("protocol", e.what());
    return;
  }
  flush_session();
}

void RtmpClient::on_peer_closed() {
  session_.transport_closed();
  if (open()) fail("eof");
}

void RtmpClient::check_setup_timeout(int64_t now, int64_t timeout_ns) {
  if (open()) session_.poll(now / kNsPerMs);
  Client::check_setup_timeout(now, timeout_ns);
}

void RtmpClient::close_at_end() {
  if (open()) {
    session_.close();
    flush_session();  // written right away when the socket takes it; not waited for
  }
  Client::close_at_end();
}

void RtmpClient::flush_session() {
  if (!open()) return;
  for (BufferRef& b : session_.take_output()) send(std::move(b));
}

void RtmpClient::on_written(uint64_t total) {
  if (!unsent_video_.empty()) {
    int64_t now = now_ns();
    while (!unsent_video_.empty() && unsent_video_.front().first <= total) {
      if (ctx_.board) ctx_.board->record(unsent_video_.front().second, now);
      unsent_video_.pop_front();
    }
  }
}

// ---------------------------------------------------------------- session events

void RtmpClient::on_state(RtmpClientState state) {
  int64_t now = now_ns();
  switch (state) {
    case RtmpClientState::Starting:
      rec_.play_ns = now;  // play / publish sent
      break;
    case RtmpClientState::Streaming:
      if (role_ == Role::Publisher) {
        begin_publishing(now);
      } else {
        mark_streaming(now);
      }
      break;
    case RtmpClientState::Failed:
      on_failed();
      break;
    default:
      break;
  }
}

void RtmpClient::on_failed() {
  const RtmpClientFailure& f = session_.failure();
  if (f.kind == RtmpClientFailure::Kind::PeerClosed) return;  // on_peer_closed counts it
  fail(error_kind(f), f.to_string());
}

void RtmpClient::on_media(RtmpMessage&& m, uint32_t /*length*/) {
  int64_t now = now_ns();
  if (m.type_id == msg_type::Audio || m.type_id == msg_type::Video) {
    on_frame(m.type_id, m.timestamp, m.payload.span(), now);
  } else if (m.type_id == msg_type::Aggregate) {
    // Spec 7.1.6: FLV-style sub-messages, timestamps rebased on the aggregate's. Aggregates are
    // kept whole by the reader; only the sub-messages' first bytes matter here.
    for (const RtmpMessage& sub : split_aggregate(m)) {
      if (sub.type_id == msg_type::Audio || sub.type_id == msg_type::Video) {
        std::span<const uint8_t> body = sub.payload.span();
        on_frame(sub.type_id, sub.timestamp, body.first(std::min<size_t>(body.size(), kHeadBytes)), now);
      }
    }
  }
  // Data messages (onMetaData, |RtmpSampleAccess): nothing to count.
}

void RtmpClient::on_frame(uint8_t type, uint32_t timestamp, std::span<const uint8_t> head, int64_t now) {
  if (type == msg_type::Audio) {
    ++rec_.audio;
    return;
  }
  if (ctx_.debug && rec_.last_media_ns && now - rec_.last_media_ns > rec_.stall_threshold_ns) {
    std::fprintf(
        stderr, "rill-bench: stall: %.0f ms without video, %.0f ms after play; timestamps %u -> %u\n",
        double(now - rec_.last_media_ns) / 1e6, double(now - rec_.play_ns) / 1e6, last_video_ts_, timestamp);
  }
  last_video_ts_ = timestamp;
  count_video(timestamp, head, now);
}

// ---------------------------------------------------------------- publisher

void RtmpClient::begin_publishing(int64_t now) {
  mark_streaming(now);
  publish_t0_ = now;
  cursor_.emplace(source_);
  // Metadata (sent as @setDataFrame by the session) and sequence headers, at timestamp 0.
  for (const SourceTag& t : source_->preamble()) session_.send_media(t.type, 0, t.body);
  flush_session();
  pump(now);
}

void RtmpClient::pump(int64_t now) {
  if (role_ != Role::Publisher || session_.state() != RtmpClientState::Streaming || !open() || !cursor_ ||
      cursor_->empty()) {
    return;
  }
  while (true) {
    int64_t due = publish_t0_ + static_cast<int64_t>(cursor_->due_ms()) * kNsPerMs;
    if (due > now) break;
    max_lag_ns_ = std::max(max_lag_ns_, now - due);
    if (queued_bytes() >= kMaxQueuedBytes) break;
    send_tag(cursor_->tag(), cursor_->timestamp(), now);
    if (!open()) return;
    cursor_->advance();
  }
}

void RtmpClient::send_tag(const SourceTag& t, uint32_t ts, int64_t now) {
  session_.send_media(t.type, ts, t.body);
  flush_session();
  if (!open()) return;
  if (t.type == kFlvTagVideo) {
    ++rec_.video;
    if (ctx_.board) {
      if (queued_bytes() == 0) {
        ctx_.board->record(ts, now_ns());  // written to the kernel right away
      } else {
        unsent_video_.emplace_back(bytes_queued_total(), ts);
      }
    }
  } else {
    ++rec_.audio;
  }
  rec_.on_media(now);
}

}  // namespace rill::loadgen
