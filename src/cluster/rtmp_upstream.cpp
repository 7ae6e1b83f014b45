#include "rill/cluster/rtmp_upstream.h"

#include <event2/event.h>

#include <exception>

#include "rill/net/tls_connection.h"
#include "rill/protocol/rtmp_message.h"

namespace rill::cluster {

using protocol::RtmpClientState;

UpstreamTarget relay_target(const config::RtmpUrl& url, const std::string& name, protocol::RtmpClientRole role,
                            int64_t connect_timeout_ms, uint32_t hops) {
  UpstreamTarget t;
  t.host = url.host;
  t.port = url.port;
  t.tls = url.tls;
  t.tls_verify = url.tls_verify;
  t.tls_ca_file = url.tls_ca_file;
  const bool v6 = url.host.find(':') != std::string::npos;
  t.client.role = role;
  t.client.app = url.app;
  t.client.tc_url = (url.tls ? "rtmps://" : "rtmp://") + (v6 ? "[" + url.host + "]" : url.host) + ":" +
                    std::to_string(url.port) + "/" + url.app;
  t.client.stream = url.name.empty() ? name : url.name;
  if (role == protocol::RtmpClientRole::Publish) t.client.flash_ver = "FMLE/3.0 (compatible; rill relay)";
  t.client.connect_timeout_ms = connect_timeout_ms;
  t.client.play_buffer_ms = 0;
  t.client.connect_extra.push_back({"rill-hops", protocol::Amf0Value::number(hops)});
  return t;
}

namespace {
// The worker's HMAC for the relay's complex handshake (protocol/handshake_mac.h), unless the
// target names its own: set up once per worker, not once per connection.
UpstreamTarget with_worker_mac(UpstreamTarget t, protocol::HandshakeMac* mac) {
  if (!t.client.handshake_mac) t.client.handshake_mac = mac;
  return t;
}
}  // namespace

RtmpUpstream::RtmpUpstream(net::WorkerCore& ctx, UpstreamTarget target, RtmpUpstreamEvents& events)
    : ctx_(ctx),
      target_(with_worker_mac(std::move(target), ctx.handshake_mac)),
      events_(events),
      session_(target_.client, *this),
      connector_(ctx.base, ctx.resolver) {}

RtmpUpstream::~RtmpUpstream() {
  closed_ = true;
  if (poll_timer_) ctx_.timers->cancel(*poll_timer_);
  if (down_timer_) ctx_.timers->cancel(*down_timer_);
}

void RtmpUpstream::start() {
  connector_.start(target_.host, target_.port, std::chrono::milliseconds(target_.client.connect_timeout_ms),
                   [this](net::TcpConnector::Result r) {
                     if (!r.fd) return down(r.error);
                     connected(std::move(r));
                   });
}

void RtmpUpstream::connected(net::TcpConnector::Result r) {
  const std::string peer = target_.host + ":" + std::to_string(target_.port);
  if (!r.skipped.empty()) {
    ctx_.log->info("connect to {}: connected to {} after {}", peer, r.address, r.skipped);
  }
  if (target_.tls) {
    std::shared_ptr<net::TlsContext> tls;
    try {
      // Per connection: a CA file replaced on disk is read again at the next attempt.
      tls = net::TlsContext::client(target_.tls_ca_file.value_or(std::string()), target_.tls_verify);
    } catch (const net::TlsError& e) {
      return down(e.what());
    }
    conn_ = std::make_unique<net::TlsConnection>(ctx_.base, *ctx_.flusher, std::move(r.fd), peer,
                                                 std::move(tls), target_.host);
  } else {
    conn_ = std::make_unique<net::PlainConnection>(ctx_.base, *ctx_.flusher, std::move(r.fd), peer);
  }
  // Handshake + connect + play must fit in connect_timeout, counted from the TCP connect.
  session_.start(ctx_.timers->now_ms());
  conn_->start(*this);
  flush_session();
  arm_poll();
}

void RtmpUpstream::on_data(std::span<const uint8_t> bytes) {
  if (closed_) return;
  try {
    session_.feed(bytes);  // protocol errors become Failed, reported by on_state
  } catch (const std::exception& e) {  // from our own owner's callbacks
    return down(std::string("upstream: ") + e.what());
  }
  flush_session();
  arm_poll();
}

void RtmpUpstream::on_close(const std::string& reason) {
  // A TLS connection that ended in its handshake (a refused certificate): its reason, not the
  // session's "peer closed while waiting for S0S1S2".
  if (const auto* tls = dynamic_cast<const net::TlsConnection*>(conn_.get()); tls && !tls->handshake_done()) {
    down(reason);
  }
  session_.transport_closed();
  down(reason);
}

void RtmpUpstream::on_state(RtmpClientState state) {
  if (closed_) return;
  if (state == RtmpClientState::Streaming) {
    events_.on_upstream_up();
  } else if (state == RtmpClientState::Failed) {
    down(session_.failure().to_string());
  }
}

void RtmpUpstream::on_status(std::string_view code, std::string_view /*description*/) {
  if (!closed_) events_.on_upstream_status(code);
}

void RtmpUpstream::on_media(protocol::RtmpMessage&& m, uint32_t /*length*/) {
  if (closed_) return;
  if (m.type_id == protocol::msg_type::Aggregate) {
    for (auto& sub : protocol::split_aggregate(m)) events_.on_upstream_media(std::move(sub));
    return;
  }
  events_.on_upstream_media(std::move(m));
}

bool RtmpUpstream::send_media(uint8_t type, uint32_t timestamp, const BufferRef& body) {
  if (!streaming() || !conn_) return false;
  if (!session_.send_media(type, timestamp, body)) return false;
  flush_session();
  return true;
}

void RtmpUpstream::flush_session() {
  if (!conn_ || !conn_->is_open() || !session_.has_output()) return;
  for (BufferRef& b : session_.take_output()) conn_->send(std::move(b));
}

// The session fails itself with Timeout once its deadline passes; poll() is how it learns the time.
void RtmpUpstream::arm_poll() {
  if (poll_timer_ || closed_) return;
  const auto deadline = session_.next_deadline_ms();
  if (!deadline) return;
  const int64_t in = std::max<int64_t>(0, *deadline - ctx_.timers->now_ms());
  poll_timer_ = ctx_.timers->schedule(std::chrono::milliseconds(in), [this] {
    poll_timer_.reset();
    session_.poll(ctx_.timers->now_ms());
    arm_poll();
  });
}

void RtmpUpstream::down(const std::string& why) {
  if (closed_ || reported_) return;
  reported_ = true;
  connector_.cancel();
  if (conn_) conn_->close(why);
  down_timer_ = ctx_.timers->schedule(std::chrono::milliseconds(0), [this, why] {
    down_timer_.reset();
    if (!closed_) events_.on_upstream_down(why);
  });
}

void RtmpUpstream::close() {
  if (closed_) return;
  if (conn_ && conn_->is_open() && !reported_) {
    session_.close();
    flush_session();
    conn_->flush();  // the polite deleteStream goes out now, as far as the socket takes it
  }
  // Closed here, not later: a retired upstream then holds nothing of the worker's loop (it may be
  // destroyed with the timer queue, after the flush scheduler).
  if (conn_) conn_->close("closed");
  closed_ = true;
  connector_.cancel();
  if (poll_timer_) ctx_.timers->cancel(*poll_timer_);
  poll_timer_.reset();
  if (down_timer_) ctx_.timers->cancel(*down_timer_);
  down_timer_.reset();
}

void RtmpUpstream::retire(TimerQueue& timers, std::unique_ptr<RtmpUpstream> u) {
  if (!u) return;
  u->close();
  // Destroyed after the callback that retired it (which may be one of its own).
  std::shared_ptr<RtmpUpstream> held(std::move(u));
  timers.schedule(std::chrono::milliseconds(0), [held] {});
}

}  // namespace rill::cluster
