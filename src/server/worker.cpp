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
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>

#include "rill/api/api_routes.h"
#include "rill/api/api_server.h"
#include "rill/cluster/cluster.h"
#include "rill/core/buffer_pool.h"
#include "rill/core/event_timer_queue.h"
#include "rill/http/http_server.h"
#include "rill/media/stream.h"
#include "rill/net/acceptor.h"
#include "rill/net/connection.h"
#include "rill/net/flush_scheduler.h"
#include "rill/net/resolver.h"
#include "rill/net/send_buffer.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/handshake_mac.h"
#include "rill/record/file_writer.h"
#include "rill/record/recording_changes.h"
#include "rill/server/admission_checks.h"
#include "rill/server/exec_hooks.h"
#include "rill/server/hls_handler.h"
#include "rill/server/hls_remote.h"
#include "rill/server/hls_variants.h"
#include "rill/server/http_admission.h"
#include "rill/server/http_flv_session.h"
#include "rill/server/record_reports.h"
#include "rill/server/recording_files_service.h"
#include "rill/server/rtmp_session.h"
#include "rill/server/rtmps_context.h"
#include "rill/server/session_address_limit.h"
#include "rill/server/stream_gate.h"
#include "rill/server/stream_routes.h"
#include "rill/server/worker_retirement.h"
#include "rill/workers/hls_fetcher.h"
#include "rill/workers/hls_sequence_memo.h"
#include "rill/workers/stream_locator.h"
#include "rill/workers/worker_details.h"
#include "rill/workers/worker_endpoint.h"
#include "rill/workers/worker_monitor.h"

namespace rill::server {

namespace {

// A simulated slow disk, for tests and scripts/bench only (docs/recording.md): the writer thread
// sleeps this many microseconds before each command it carries out (open, write, close). Read once,
// when a worker creates its writer; said loudly in the log, since no deployment wants it.
constexpr const char* kTestWriteDelayEnv = "RILL_TEST_RECORD_WRITE_DELAY_US";

std::chrono::microseconds test_record_write_delay(spdlog::logger& log, int worker) {
  const char* text = std::getenv(kTestWriteDelayEnv);
  if (!text || !*text) return {};
  char* end = nullptr;
  const long long us = std::strtoll(text, &end, 10);
  if (*end != '\0' || us <= 0 || us > 10'000'000) {
    log.warn("{}='{}' ignored: microseconds from 1 to 10000000 expected", kTestWriteDelayEnv, text);
    return {};
  }
  log.warn(
      "{}={}: FOR TESTS ONLY: worker {}'s recording writer sleeps {} us before every file command (a "
      "simulated slow disk)",
      kTestWriteDelayEnv, us, worker, us);
  return std::chrono::microseconds(us);
}

record::FileWriterOptions record_writer_options(RecordReports& reports,
                                                std::shared_ptr<record::RecordingChanges> changes,
                                                std::chrono::microseconds test_delay) {
  record::FileWriterOptions o;
  o.on_opened = [changes](const record::RecordFilePtr&) { changes->note(); };
  o.on_closed = [&reports, changes](record::RecordFilePtr f) {
    changes->note();
    reports.closed(std::move(f));
  };
  if (test_delay.count() > 0) o.before_command = [test_delay] { std::this_thread::sleep_for(test_delay); };
  return o;
}

bool records(const config::Config& c) {
  return std::any_of(c.apps.begin(), c.apps.end(), [](const auto& a) { return a.second.record.enabled(); });
}

}  // namespace

struct Worker::Impl {
  event_base* base;
  WorkerContext wctx;
  // Host names of relays and callbacks (net/resolver.h). Before the timers: upstreams retired
  // into the timer queue cancel their lookups when it goes.
  net::Resolver resolver;
  // Publishers' messages and frames (core/buffer_pool.h); before whatever holds frames, though the
  // pool outlives its handle until its last block comes back.
  BufferPool::Owner frame_pool = BufferPool::create();
  // The RTMP handshake's HMAC (protocol/handshake_mac.h): looked up and keyed once, not per connection.
  protocol::HandshakeMac handshake_mac;
  EventTimerQueue timers;
  net::FlushScheduler flusher;
  // Its closed files' on_record_done callbacks, on this loop; before the writer, whose thread
  // reports to it until it is joined.
  std::unique_ptr<RecordReports> record_reports;
  // What the writer's opens and closes tell the catalog of recording_files (its index of ids).
  std::shared_ptr<record::RecordingChanges> recording_changes = std::make_shared<record::RecordingChanges>();
  // apps.NAME.record: the thread that writes recording files, when an app records. Before the
  // streams: their recorders close their files through it.
  std::unique_ptr<record::FileWriter> record_writer;
  media::StreamRegistry streams;
  net::SessionSet sessions;
  SessionAddressLimit rtmp_per_address{sessions};  // rtmp.max_connections_per_ip
  net::WorkerCore ctx;
  // Before http: held HLS requests cancel their fetches when the HTTP server closes their connections.
  std::unique_ptr<workers::HlsFetcher> hls_fetcher;
  std::unique_ptr<HlsRemote> hls_remote;      // with the fetcher: streams whose HLS another worker holds
  std::unique_ptr<HlsVariants> hls_variants;  // rendition groups' multivariant playlists
  std::unique_ptr<HlsHandler> hls;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<StreamRoutes> stream_routes;  // FLV and HLS, on `http` only
  std::unique_ptr<workers::StreamLocator> locator;
  std::unique_ptr<workers::WorkerEndpoint> link_endpoint;  // this worker's socket: other workers' links
  // apps.NAME.exec's children (docs/abr.md); before the gate, whose check reports to it.
  std::unique_ptr<ExecHooks> exec_hooks;
  std::unique_ptr<StreamGate> gate;
  std::unique_ptr<workers::WorkerMonitor> monitor;         // after sessions: it observes them
  std::unique_ptr<workers::WorkerDetails> details;         // what this worker tells the control plane
  std::unique_ptr<api::ApiServer> api;                     // api.listen (docs/api.md)
  std::unique_ptr<RecordingFilesService> recording_files;  // after api: its routes are on it
  std::unique_ptr<rill::cluster::Cluster> cluster;         // edge pulls, static pulls, pushes
  std::vector<std::unique_ptr<net::Acceptor>> rtmp_acceptors;
  std::shared_ptr<net::TlsContext> rtmps;  // rtmp.tls_listen's certificate, read at start
  std::function<void()> on_drained;
  std::function<void()> on_stopped;  // a fast stop's end (stop_now)
  event* drain_check = nullptr;
  std::unique_ptr<WorkerRetirement> retirement;  // an old generation after a reload

  Impl(event_base* b, WorkerContext c)
      : base(b),
        wctx(std::move(c)),
        resolver(b),
        timers(b),
        flusher(b, net::merge_writes_of(*wctx.config)),
        record_reports(records(*wctx.config)
                           ? std::make_unique<RecordReports>(b, &resolver, wctx.config, *wctx.log)
                           : nullptr),
        record_writer(record_reports ? std::make_unique<record::FileWriter>(
                                           record_writer_options(*record_reports, recording_changes,
                                                                 test_record_write_delay(*wctx.log, wctx.id)))
                                     : nullptr),
        streams(timers, wctx.log,
                [this](media::Stream& s, const config::AppConfig& a, media::PublishOrigin o) {
                  return cluster ? cluster->outputs(s, a, o) : media::default_outputs(s, a, o);
                }),
        sessions(timers) {
    streams.set_record_writer(record_writer.get());
    if (record_writer) record_reports->set_on_wake([w = record_writer.get()] { w->release_written(); });
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
    ctx.frame_pool = frame_pool.get();
    ctx.handshake_mac = &handshake_mac;
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
    // The services, each handed what it uses (no service reaches another through the core).
    locator = std::make_unique<workers::StreamLocator>(ctx, lo);
    cluster = std::make_unique<rill::cluster::Cluster>(ctx, *locator);
    gate = std::make_unique<StreamGate>(ctx, *locator, cluster.get());
    install_admission_checks(*gate, ctx);
    if (locator->shares_streams()) {
      workers::HlsFetcherOptions fo;
      fo.runtime_dir = wctx.config->runtime_dir;
      for (const auto& [name, app] : wctx.config->apps) {
        fo.max_object = static_cast<uint32_t>(
            std::max<size_t>(fo.max_object, std::min<size_t>(app.hls.max_segment_size, UINT32_MAX)));
      }
      hls_fetcher = std::make_unique<workers::HlsFetcher>(ctx, fo);
    }
    monitor = std::make_unique<workers::WorkerMonitor>(ctx, locator.get(), wctx.counters,
                                                       static_cast<uint32_t>(wctx.id));
    details = std::make_unique<workers::WorkerDetails>(ctx, locator.get(), hls_fetcher.get(), monitor.get(),
                                                       cluster.get());
    install_exec_hooks();
    link_endpoint = std::make_unique<workers::WorkerEndpoint>(ctx, locator.get(), *details);
    http = std::make_unique<HttpServer>(ctx);
    stream_routes = std::make_unique<StreamRoutes>(*http);
    stream_routes->set(StreamRoute::Flv, [this](HttpExchange& ex, const StreamPath& route) {
      // The session exists only once admitted: a refused or vanished client leaves nothing behind.
      admit_http_play(
          ctx, *gate, ex, GateProto::HttpFlv, route.key, [this, route](HttpExchange& e, GateDecision d) {
            auto* s =
                static_cast<HttpFlvSession*>(sessions.add(std::make_unique<HttpFlvSession>(ctx, e, route)));
            s->start(d.stream);
          });
    });
    if (hls_fetcher) hls_remote = std::make_unique<HlsRemote>(ctx, *locator, *hls_fetcher);
    hls_variants =
        std::make_unique<HlsVariants>(ctx, hls_fetcher ? locator.get() : nullptr, hls_fetcher.get());
    hls = std::make_unique<HlsHandler>(ctx, *gate, monitor.get(), hls_remote.get(), hls_variants.get());
    hls->install(*stream_routes);
    api = std::make_unique<api::ApiServer>(ctx, *details, monitor.get(), locator.get());
    api::mount_api_routes(*api);
    recording_files = std::make_unique<RecordingFilesService>(ctx, *api, wctx.id == 0, recording_changes);
    recording_files->serve_files(*http, *stream_routes, *gate);
    recording_files->serve_rewind(streams.hls());
    // /healthz on either port counts the worker's streams: the HTTP stack itself knows none.
    auto streams_field = [this] { return " streams=" + std::to_string(streams.size()); };
    http->set_health_fields(streams_field);
    api->http().set_health_fields(streams_field);
  }

  // apps.NAME.exec: the gate tells the hooks of publishes, the recorder of closed files; the
  // API shows their children.
  void install_exec_hooks() {
    exec_hooks = std::make_unique<ExecHooks>(ctx);
    gate->add_check(exec_hooks->gate_check());
    if (record_reports) {
      record_reports->set_exec_hook(
          [this](const std::string& app, const std::string& name, const std::string& path) {
            exec_hooks->record_done(app, name, path);
          });
    }
    details->set_stream_extras([this](const std::string& app, const std::string& name, nlohmann::json& row) {
      if (auto kids = exec_hooks->children_of(media::StreamKey{app, name}); !kids.empty())
        row["exec"] = exec_children_json(kids);
    });
    details->set_worker_extras([this](nlohmann::json& stats) {
      stats["exec"] = {{"children", exec_hooks->alive()}, {"restarts_total", exec_hooks->restarts_total()}};
    });
  }

  // An RTMP connection the acceptor took (rtmp.listen or, with `tls`, rtmp.tls_listen).
  void serve_rtmp(net::UniqueFd owned, const sockaddr_storage& ss, bool tls) {
    const std::string peer = net::peer_name(ss);
    // The limit counts RTMP sessions only: HTTP-FLV players and worker links do not count.
    if (sessions.count(net::SessionProtocol::Rtmp) >= wctx.config->rtmp.max_connections) {
      ctx.log->warn("rtmp: {} refused: worker connection limit {} reached", peer,
                    wctx.config->rtmp.max_connections);
      return;
    }
    if (!rtmp_per_address.try_take(peer, wctx.config->rtmp.max_connections_per_ip)) {
      ctx.log->warn("rtmp: {} refused: max_connections_per_ip {} reached", peer,
                    wctx.config->rtmp.max_connections_per_ip);
      return;
    }
    const int fd = owned.get();
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Slow players cut in seconds (net/send_buffer.h).
    net::limit_kernel_send_queue(fd, wctx.config->rtmp.send_buffer, wctx.config->rtmp.notsent_lowat);
    std::unique_ptr<net::Connection> conn;
    if (tls) {
      conn = std::make_unique<net::TlsConnection>(base, flusher, std::move(owned), peer, rtmps);
    } else {
      conn = std::make_unique<net::PlainConnection>(base, flusher, std::move(owned), peer);
    }
    auto* s =
        static_cast<RtmpSession*>(sessions.add(std::make_unique<RtmpSession>(ctx, *gate, std::move(conn))));
    rtmp_per_address.bind(*s, peer);
    s->start();
  }

  // The TLS contexts of the slot's TLS sockets, read once at start (a certificate that does not
  // load leaves that service's TLS sockets closed; `rill -t` and a reload check them first).
  std::shared_ptr<net::TlsContext> tls_context(net::ListenService service) {
    try {
      switch (service) {
        case net::ListenService::Rtmp:
          return rtmps ? rtmps : rtmps = make_rtmps_context(wctx.config->rtmp);
        case net::ListenService::Http:
          return make_https_context(wctx.config->http);
        case net::ListenService::Api:
          return make_api_tls_context(*wctx.config);
      }
    } catch (const net::TlsError& e) {
      ctx.log->error("{} over TLS: not listening: {}", net::to_string(service), e.what());
    }
    return nullptr;
  }

  // Every listening socket of the slot, whatever it serves: RTMP sessions here, HTTP and the API
  // through their servers (which use the same net::Acceptor).
  void open_listeners() {
    std::shared_ptr<net::TlsContext> tls[3];
    for (const net::ListenSocket& l : wctx.listeners) {
      const auto i = static_cast<size_t>(l.service);
      if (l.tls && !tls[i]) tls[i] = tls_context(l.service);
      if (l.tls && !tls[i]) continue;
      switch (l.service) {
        case net::ListenService::Rtmp:
          rtmp_acceptors.push_back(std::make_unique<net::Acceptor>(
              base, l.fd, l.tls ? "rtmps" : "rtmp", ctx.log,
              [this, tls = l.tls](net::UniqueFd fd, const sockaddr_storage& ss) {
                serve_rtmp(std::move(fd), ss, tls);
              }));
          break;
        case net::ListenService::Http:
          http->listen(l.fd, l.tls ? tls[i] : nullptr);
          break;
        case net::ListenService::Api:
          api->http().listen(l.fd, l.tls ? tls[i] : nullptr);
          break;
      }
    }
  }

  // A fast stop closed the publishers, and with them their recording files: the writer thread
  // closes them on disk, then their on_record_done calls go out from this loop. Polled until
  // both are done or `deadline` (ms, the timer queue's clock) passes.
  void await_record_reports(int64_t deadline) {
    if (record_writer->idle() && record_reports->idle()) {
      wctx.log->debug("stop: every closed recording reported");
      return stopped();
    }
    if (timers.now_ms() >= deadline) {
      wctx.log->warn("stop: exiting without waiting longer for {} unanswered on_record_done call(s){}",
                     record_reports->calls_in_flight(),
                     record_writer->idle() ? "" : " and recording files still closing (not reported)");
      return stopped();
    }
    timers.schedule(std::chrono::milliseconds(50), [this, deadline] { await_record_reports(deadline); });
  }
  void stopped() {
    if (auto done = std::exchange(on_stopped, nullptr)) done();
  }

  // No new connection on any listener (the master keeps the sockets for the slot's next worker).
  // `quiet`: a retiring worker, whose HTTP connections go on being answered.
  void stop_accepting(bool quiet) {
    rtmp_acceptors.clear();
    if (quiet) {
      http->close_listeners();
      api->http().close_listeners();
    } else {
      http->stop_accepting();
      api->stop_accepting();
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
  impl_->rtmp_acceptors.clear();
  impl_->api.reset();
  impl_->http.reset();
  if (impl_->drain_check) event_free(impl_->drain_check);
}

void Worker::start() {
  impl_->open_listeners();
  impl_->monitor->start();
  impl_->link_endpoint->start(impl_->wctx.config->runtime_dir, impl_->wctx.id);
  impl_->cluster->start();
  size_t rtmp = 0, http = 0;
  for (const net::ListenSocket& l : impl_->wctx.listeners) {
    rtmp += l.service == net::ListenService::Rtmp;
    http += l.service == net::ListenService::Http;
  }
  impl_->ctx.log->info("worker {} started: {} rtmp listener(s), {} http listener(s)", impl_->wctx.id, rtmp,
                       http);
}

void Worker::retire(std::chrono::milliseconds idle_limit, std::function<void()> on_done) {
  if (impl_->retirement) return;
  impl_->stop_accepting(true);
  // The worker socket stays: new-generation workers pull this worker's streams through it.
  impl_->retirement = std::make_unique<WorkerRetirement>(impl_->ctx, idle_limit, std::move(on_done));
  impl_->retirement->start();
}

void Worker::drain(std::function<void()> on_drained) {
  impl_->retirement.reset();
  impl_->stop_accepting(false);
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

void Worker::stop_now(std::chrono::milliseconds reports_for, std::function<void()> on_stopped) {
  impl_->retirement.reset();
  impl_->stop_accepting(false);
  impl_->link_endpoint->stop();
  impl_->sessions.close_all("worker stopping");
  impl_->cluster->stop();
  impl_->locator->close_all();
  impl_->on_stopped = std::move(on_stopped);
  if (!impl_->record_reports || reports_for.count() <= 0) return impl_->stopped();
  impl_->await_record_reports(impl_->timers.now_ms() + reports_for.count());
}

size_t Worker::session_count() const { return impl_->sessions.size(); }

}  // namespace rill::server
