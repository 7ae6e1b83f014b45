#pragma once
// RtmpUpstream: one RTMP client connection of this server to another (an edge pull, a static
// pull, a push) — the I/O adapter of protocol::RtmpClientSession: a net::TcpConnector (the host
// resolved by the worker's resolver, again for every upstream, each address tried), a
// net::Connection (a net::TlsConnection for rtmps://, its handshake inside the connect timeout),
// and the worker's timers for the session's connect timeout.
//
// Its owner learns what happens through RtmpUpstreamEvents. on_upstream_down() is called once,
// for every end the owner did not ask for with close(); the owner must not destroy the upstream
// from inside a callback (retire it: RtmpUpstream::retire()).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rill/config/config.h"
#include "rill/core/timer_queue.h"
#include "rill/net/connection.h"
#include "rill/net/worker_core.h"
#include "rill/net/tcp_connector.h"
#include "rill/protocol/rtmp_client_session.h"

namespace rill::cluster {

class RtmpUpstreamEvents {
 public:
  // Streaming: NetStream.Play.Start / NetStream.Publish.Start came.
  virtual void on_upstream_up() = 0;
  // Players: one audio, video or data message (aggregates already split).
  virtual void on_upstream_media(protocol::RtmpMessage&& /*m*/) {}
  // Every onStatus code the server sent (e.g. NetStream.Play.UnpublishNotify).
  virtual void on_upstream_status(std::string_view /*code*/) {}
  // The connection failed or ended: why, for the log ("connect to 127.0.0.1:1935: Connection
  // refused", "starting: status error NetStream.Play.StreamNotFound: ...", "peer closed").
  virtual void on_upstream_down(const std::string& why) = 0;

 protected:
  ~RtmpUpstreamEvents() = default;
};

struct UpstreamTarget {
  std::string host;
  uint16_t port = 1935;
  // rtmps://: TLS with SNI `host`, the certificate verified for `host` against tls_ca_file or the
  // system's trust store (tls_verify = false: not verified).
  bool tls = false;
  bool tls_verify = true;
  std::optional<std::string> tls_ca_file;
  protocol::RtmpClientOptions client;  // role, app, tcUrl, stream, connect_timeout_ms, rill-hops
};

// The target of a relay connection to `url` for stream `name` (the URL's own name when it ends in
// /NAME): tcUrl, role, timeout, and the hop count in connect's "rill-hops" (loop protection).
UpstreamTarget relay_target(const config::RtmpUrl& url, const std::string& name, protocol::RtmpClientRole role,
                            int64_t connect_timeout_ms, uint32_t hops);

class RtmpUpstream final : public net::ConnectionHandler, public protocol::RtmpClientEvents {
 public:
  RtmpUpstream(net::WorkerCore& ctx, UpstreamTarget target, RtmpUpstreamEvents& events);
  ~RtmpUpstream();
  RtmpUpstream(const RtmpUpstream&) = delete;
  RtmpUpstream& operator=(const RtmpUpstream&) = delete;

  // Starts the lookup and TCP connect, which the connect timeout bounds; the handshake, connect
  // and play/publish answered get the connect timeout again from the TCP connect. Failures are
  // reported through on_upstream_down (never synchronously).
  void start();
  // Ends politely (deleteStream, written now as far as the socket takes it), without a callback.
  void close();
  bool streaming() const { return session_.state() == protocol::RtmpClientState::Streaming && !closed_; }
  // Publishers: one FLV tag body; false when not streaming.
  bool send_media(uint8_t type, uint32_t timestamp, const BufferRef& body);
  // Bytes written but not yet taken by the kernel (a slow push target).
  size_t queued_bytes() const { return conn_ ? conn_->queued_bytes() : 0; }
  uint64_t bytes_in() const { return conn_ ? conn_->bytes_in() : 0; }
  uint64_t bytes_out() const { return conn_ ? conn_->bytes_out() : 0; }
  const UpstreamTarget& target() const { return target_; }

  // Closes `u` and destroys it after the current callback.
  static void retire(TimerQueue& timers, std::unique_ptr<RtmpUpstream> u);

 private:
  // net::ConnectionHandler
  void on_data(std::span<const uint8_t> bytes) override;
  void on_close(const std::string& reason) override;
  // protocol::RtmpClientEvents
  void on_state(protocol::RtmpClientState state) override;
  void on_status(std::string_view code, std::string_view description) override;
  void on_media(protocol::RtmpMessage&& m, uint32_t length) override;

  void connected(net::TcpConnector::Result r);
  void flush_session();
  void arm_poll();
  void down(const std::string& why);  // reported once, from a timer (never inside start())

  net::WorkerCore& ctx_;
  UpstreamTarget target_;
  RtmpUpstreamEvents& events_;
  protocol::RtmpClientSession session_;
  net::TcpConnector connector_;
  std::unique_ptr<net::Connection> conn_;
  std::optional<TimerId> poll_timer_;
  std::optional<TimerId> down_timer_;
  bool closed_ = false;
  bool reported_ = false;
};

}  // namespace rill::cluster
