// Worker: the listeners and sessions of one worker process, on one event_base.
#include "rill/server/worker.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "rill/cluster/cluster.h"
#include "rill/core/event_timer_queue.h"
#include "rill/media/stream.h"
#include "rill/net/connection.h"
#include "rill/net/flush_scheduler.h"
#include "rill/net/resolver.h"
#include "rill/net/send_buffer.h"
#include "rill/net/server_context.h"
#include "rill/server/admission_checks.h"
#include "rill/server/api_routes.h"
#include "rill/server/api_server.h"
#include "rill/server/hls_handler.h"
#include "rill/server/http_admission.h"
#include "rill/server/http_flv_session.h"
#include "rill/server/http_server.h"
#include "rill/server/rtmp_session.h"
#include "rill/server/rtmps_context.h"
#include "rill/server/session_address_limit.h"
#include "rill/server/stream_gate.h"
#include "rill/server/worker_retirement.h"
#include "rill/workers/hls_fetcher.h"
#include "rill/workers/hls_sequence_memo.h"
#include "rill/workers/stream_locator.h"
#include "rill/workers/worker_endpoint.h"
#include "rill/workers/worker_monitor.h"

namespace rill::server {

struct Worker::Impl {
  event_base* base;
  WorkerContext wctx;
  // Host names of relays and callbacks (net/resolver.h). Before the timers: upstreams retired
  // into the timer queue cancel their lookups when it goes.
  net::Resolver resolver;
  EventTimerQueue timers;
  net::FlushScheduler flusher;
  media::StreamRegistry streams;
  net::SessionSet sessions;
  SessionAddressLimit rtmp_per_address{sessions};  // rtmp.max_connections_per_ip
  net::ServerContext ctx;
  // Before http: held HLS requests cancel their fetches when the HTTP server closes their connections.
  std::unique_ptr<workers::HlsFetcher> hls_fetcher;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<workers::StreamLocator> locator;
  std::unique_ptr<workers::WorkerEndpoint> link_endpoint;  // this worker's socket: other workers' links
  std::unique_ptr<StreamGate> gate;
  std::unique_ptr<workers::WorkerMonitor> monitor;  // after sessions: it observes them
  std::unique_ptr<ApiServer> api;                   // api.listen (docs/api.md)
  std::unique_ptr<rill::cluster::Cluster> cluster;  // edge pulls, static pulls, pushes
  std::vector<event*> rtmp_accept_evs;
  std::shared_ptr<net::TlsContext> rtmps;  // rtmp.tls_listen's certificate, read at start
  bool accepting = false;
  std::function<void()> on_drained;
  event* drain_check = nullptr;
  std::unique_ptr<WorkerRetirement> retirement;  // an old generation after a reload

  Impl(event_base* b, WorkerContext c)
      : base(b),
        wctx(std::move(c)),
        resolver(b),
        timers(b),
        flusher(b, net::merge_writes_of(*wctx.config)),
        streams(timers, wctx.log,
                [this](media::Stream& s, const config::AppConfig& a, media::PublishOrigin o) {
                  return cluster ? cluster->outputs(s, a, o) : media::default_outputs(s, a, o);
                }),
        sessions(timers) {
    ctx.base = b;
    ctx.worker_id = wctx.id;
    ctx.config = wctx.config;
    ctx.streams = &streams;
    ctx.flusher = &flusher;
    if (wctx.config->send_method == config::Config::SendMethod::IoUring) {
      std::string why;
      if (auto ring = net::SendRing::create(&why)) {
        flusher.use_ring(std::move(ring));
      } else {
        wctx.log->warn("send_method io_uring unavailable ({}): worker {} sends with sendmsg", why, wctx.id);
      }
    }
    ctx.timers = &timers;
    ctx.sessions = &sessions;
    ctx.resolver = &resolver;
    if (!resolver.setup_note().empty()) wctx.log->info("resolver: {}", resolver.setup_note());
    ctx.log = wctx.log;
    ctx.access_log = wctx.access_log;
    workers::LocatorOptions lo;
    lo.table = wctx.ownership;
    if (wctx.ownership) streams.hls().set_continuity(&wctx.ownership->hls_memo());
    lo.slot = wctx.id;
    lo.pid = ::getpid();
    lo.workers = wctx.workers;
    lo.generation = wctx.generation;
    lo.runtime_dir = wctx.config->runtime_dir;
    lo.idle_grace = wctx.config->worker_link.idle_grace;
    locator = std::make_unique<workers::StreamLocator>(ctx, lo);
    ctx.locator = locator.get();
    gate = std::make_unique<StreamGate>(ctx);
    ctx.gate = gate.get();
    install_admission_checks(*gate, ctx);
    link_endpoint = std::make_unique<workers::WorkerEndpoint>(ctx);
    cluster = std::make_unique<rill::cluster::Cluster>(ctx);
    ctx.cluster = cluster.get();
    ctx.relays = cluster.get();
    if (locator->shares_streams()) {
      workers::HlsFetcherOptions fo;
      fo.runtime_dir = wctx.config->runtime_dir;
      for (const auto& [name, app] : wctx.config->apps) {
        fo.max_object = static_cast<uint32_t>(
            std::max<size_t>(fo.max_object, std::min<size_t>(app.hls.max_segment_size, UINT32_MAX)));
      }
      hls_fetcher = std::make_unique<workers::HlsFetcher>(ctx, fo);
      ctx.hls_fetcher = hls_fetcher.get();
    }
    http = std::make_unique<HttpServer>(ctx);
    http->set_stream_handler(
        StreamRoute::Flv, [this](HttpExchange& ex, const HttpRequestInfo& info, const StreamPath& route) {
          // The session exists only once admitted: a refused or vanished client leaves nothing behind.
          admit_http_play(ctx, *http, ex, info, GateProto::HttpFlv, route.key,
                          [this, route](HttpExchange& e, const HttpRequestInfo& i, GateDecision d) {
                            auto* s = static_cast<HttpFlvSession*>(
                                sessions.add(std::make_unique<HttpFlvSession>(ctx, *http, e, i, route)));
                            s->start(d.stream);
                          });
        });
    install_hls_handlers(*http, ctx);
    monitor = std::make_unique<workers::WorkerMonitor>(ctx, wctx.counters, static_cast<uint32_t>(wctx.id));
    ctx.monitor = monitor.get();
    api = std::make_unique<ApiServer>(ctx);
    mount_api_routes(*api);
  }

  static void on_rtmp_accept(int fd, short, void* arg) { static_cast<Impl*>(arg)->accept_rtmp(fd); }
  bool is_tls_listener(int lfd) const {
    return std::find(wctx.rtmps_fds.begin(), wctx.rtmps_fds.end(), lfd) != wctx.rtmps_fds.end();
  }

  // Accept until EAGAIN: under a connection storm the backlog is emptied every loop iteration.
  void accept_rtmp(int lfd) {
    for (int i = 0; i < 1024; ++i) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      int fd = accept4(lfd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE)
          ctx.log->error("rtmp: accept: {} (raise LimitNOFILE)", strerror(errno));
        return;
      }
      net::UniqueFd owned(fd);
      if (!accepting) continue;
      // The limit counts RTMP sessions only: HTTP-FLV players and worker links do not count.
      if (sessions.count(net::SessionProtocol::Rtmp) >= wctx.config->rtmp.max_connections) {
        ctx.log->warn("rtmp: {} refused: worker connection limit {} reached", net::peer_name(ss),
                      wctx.config->rtmp.max_connections);
        continue;
      }
      const std::string peer = net::peer_name(ss);
      if (!rtmp_per_address.try_take(peer, wctx.config->rtmp.max_connections_per_ip)) {
        ctx.log->warn("rtmp: {} refused: max_connections_per_ip {} reached", peer,
                      wctx.config->rtmp.max_connections_per_ip);
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      // Slow players cut in seconds (net/send_buffer.h).
      net::limit_kernel_send_queue(fd, wctx.config->rtmp.send_buffer, wctx.config->rtmp.notsent_lowat);
      std::unique_ptr<net::Connection> conn;
      if (is_tls_listener(lfd)) {
        conn = std::make_unique<net::TlsConnection>(base, flusher, std::move(owned), peer, rtmps);
      } else {
        conn = std::make_unique<net::PlainConnection>(base, flusher, std::move(owned), peer);
      }
      auto* s = static_cast<RtmpSession*>(sessions.add(std::make_unique<RtmpSession>(ctx, std::move(conn))));
      rtmp_per_address.bind(*s, peer);
      s->start();
    }
  }
};

Worker::Worker(event_base* base, WorkerContext ctx) : impl_(std::make_unique<Impl>(base, std::move(ctx))) {}

Worker::~Worker() {
  impl_->retirement.reset();
  impl_->sessions.close_all("worker exiting");
  impl_->cluster->stop();
  impl_->locator->close_all();
  impl_->link_endpoint->stop();
  impl_->api.reset();
  impl_->http.reset();
  for (auto* ev : impl_->rtmp_accept_evs) event_free(ev);
  if (impl_->drain_check) event_free(impl_->drain_check);
}

void Worker::start() {
  std::vector<int> rtmp_fds = impl_->wctx.rtmp_fds;
  try {
    impl_->rtmps = make_rtmps_context(impl_->wctx.config->rtmp);
    if (impl_->rtmps)
      rtmp_fds.insert(rtmp_fds.end(), impl_->wctx.rtmps_fds.begin(), impl_->wctx.rtmps_fds.end());
  } catch (const net::TlsError& e) {
    impl_->ctx.log->error("rtmps: not listening: {}", e.what());  // `rill -t` and reload check it first
  }
  for (int fd : rtmp_fds) {
    evutil_make_socket_nonblocking(fd);
    event* ev = event_new(impl_->base, fd, EV_READ | EV_PERSIST, &Impl::on_rtmp_accept, impl_.get());
    event_add(ev, nullptr);
    impl_->rtmp_accept_evs.push_back(ev);
  }
  for (int fd : impl_->wctx.http_fds) impl_->http->listen(fd);
  for (int fd : impl_->wctx.api_fds) impl_->api->listen(fd);
  impl_->monitor->start();
  try {
    if (auto https = make_https_context(impl_->wctx.config->http)) {
      for (int fd : impl_->wctx.https_fds) impl_->http->listen_tls(fd, https);
    }
    if (auto api_tls = make_api_tls_context(*impl_->wctx.config)) {
      for (int fd : impl_->wctx.api_tls_fds) impl_->api->http().listen_tls(fd, api_tls);
    }
  } catch (const net::TlsError& e) {
    impl_->ctx.log->error("https: not listening: {}", e.what());  // `rill -t` and reload check it first
  }
  impl_->link_endpoint->start(impl_->wctx.config->runtime_dir, impl_->wctx.id);
  impl_->accepting = true;
  impl_->cluster->start();
  impl_->ctx.log->info("worker {} started: {} rtmp listener(s), {} http listener(s)", impl_->wctx.id,
                       impl_->wctx.rtmp_fds.size(), impl_->wctx.http_fds.size());
}

void Worker::retire(std::chrono::milliseconds idle_limit, std::function<void()> on_done) {
  if (impl_->retirement) return;
  impl_->accepting = false;
  for (auto* ev : impl_->rtmp_accept_evs) event_del(ev);
  impl_->http->close_listeners();
  impl_->api->http().close_listeners();
  // The worker socket stays: new-generation workers pull this worker's streams through it.
  impl_->retirement = std::make_unique<WorkerRetirement>(impl_->ctx, idle_limit, std::move(on_done));
  impl_->retirement->start();
}

void Worker::drain(std::function<void()> on_drained) {
  impl_->retirement.reset();
  impl_->accepting = false;
  for (auto* ev : impl_->rtmp_accept_evs) event_del(ev);
  impl_->http->stop_accepting();
  impl_->api->stop_accepting();
  impl_->link_endpoint->stop();
  impl_->cluster->stop();
  impl_->sessions.drain_all();
  impl_->on_drained = std::move(on_drained);
  // Sessions are destroyed after their callbacks; check until none is left.
  auto check = [](int, short, void* arg) {
    auto* impl = static_cast<Impl*>(arg);
    if (impl->sessions.size() == 0 && impl->on_drained) {
      auto cb = std::move(impl->on_drained);
      impl->on_drained = nullptr;
      event_del(impl->drain_check);
      cb();
    }
  };
  impl_->drain_check = event_new(impl_->base, -1, EV_PERSIST, check, impl_.get());
  timeval tv{0, 50 * 1000};
  event_add(impl_->drain_check, &tv);
}

void Worker::stop_now() {
  impl_->retirement.reset();
  impl_->accepting = false;
  for (auto* ev : impl_->rtmp_accept_evs) event_del(ev);
  impl_->http->stop_accepting();
  impl_->api->stop_accepting();
  impl_->link_endpoint->stop();
  impl_->sessions.close_all("worker stopping");
  impl_->cluster->stop();
  impl_->locator->close_all();
}

size_t Worker::session_count() const { return impl_->sessions.size(); }

}  // namespace rill::server
