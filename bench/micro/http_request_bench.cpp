// rill-microbench: what one HLS request costs in user space before any byte is sent, no sockets
// (docs/benchmarks.md). A live HLS player polls its playlist every half target duration, so at
// scale the request path — not the bytes — is much of an HLS server's work:
//   HttpRequestHead  the head of a player's GET parsed (HttpRequestHeadParser: feed, take, reset)
//   GateAdmitHls     StreamGate::decide_play_now (what an HTTP request asks first) with the three
//                    checks a worker installs, on an app that configures none of them (the common
//                    case: each is passed over, and the decision comes back directly)
//   ResponseHead     the playlist's headers added and the head rendered (ResponseHeaders,
//                    render_response_head)
//
//   build/release/rill-microbench --benchmark_filter='HttpRequestHead|GateAdmitHls|ResponseHead'
#include <benchmark/benchmark.h>
#include <event2/event.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "rill/config/config.h"
#include "rill/core/event_timer_queue.h"
#include "rill/core/log.h"
#include "rill/http/http_exchange.h"
#include "rill/media/stream.h"
#include "rill/media/stream_output.h"
#include "rill/net/flush_scheduler.h"
#include "rill/net/worker_core.h"
#include "rill/protocol/http_request_head.h"
#include "rill/server/admission_checks.h"
#include "rill/server/stream_gate.h"
#include "rill/workers/stream_locator.h"
#include "support/test_worker.h"

namespace {

using namespace rill;

// What hls.js in Chromium sends for a playlist reload.
constexpr std::string_view kPlaylistGet =
    "GET /hls/cam.m3u8 HTTP/1.1\r\n"
    "Host: 127.0.0.1:8080\r\n"
    "Connection: keep-alive\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 "
    "Safari/537.36\r\n"
    "Accept: */*\r\n"
    "Origin: http://127.0.0.1:8000\r\n"
    "Referer: http://127.0.0.1:8000/\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
    "Accept-Language: en-US,en;q=0.9\r\n"
    "\r\n";

void BM_HttpRequestHead(benchmark::State& state) {
  protocol::HttpRequestHeadParser parser;
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(kPlaylistGet.data()),
                                       kPlaylistGet.size());
  for (auto _ : state) {
    size_t consumed = 0;
    const auto r = parser.feed(bytes, consumed);
    benchmark::DoNotOptimize(r);
    protocol::HttpRequestHead head = parser.take();
    benchmark::DoNotOptimize(head);
    parser.reset();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HttpRequestHead);

// A worker's gate, as the unit tests build one: one app, HLS on, no access rules, no auth, no
// callbacks.
class GateFixture {
 public:
  GateFixture() : worker_(hls_config()), core_(worker_.core()) {
    locator_ = std::make_unique<workers::StreamLocator>(core_, workers::LocatorOptions{});
    gate_ = std::make_unique<server::StreamGate>(core_, *locator_, nullptr);
    server::install_admission_checks(*gate_, core_);
  }
  ~GateFixture() {
    gate_.reset();
    locator_.reset();
  }
  server::StreamGate& gate() { return *gate_; }

 private:
  static config::Config hls_config() {
    config::Config cfg;
    config::AppConfig hls;
    hls.name = "hls";
    hls.hls.enabled = true;
    cfg.apps["hls"] = hls;
    return cfg;
  }
  testsupport::TestWorker worker_;  // first: outlives the services below
  net::WorkerCore& core_;
  std::unique_ptr<workers::StreamLocator> locator_;
  std::unique_ptr<server::StreamGate> gate_;
};

void BM_GateAdmitHls(benchmark::State& state) {
  GateFixture f;
  uint64_t admitted = 0;
  for (auto _ : state) {
    server::AdmissionRequest r;
    r.proto = server::GateProto::Hls;
    r.key = media::StreamKey{"hls", "cam"};
    r.peer = "127.0.0.1:40000";
    r.session_id = 7;
    const std::optional<server::GateDecision> d = f.gate().decide_play_now(r);
    admitted += d && d->verdict == server::Verdict::Admitted;
  }
  if (admitted != static_cast<uint64_t>(state.iterations()))
    state.SkipWithError("a request was not admitted");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GateAdmitHls);

void BM_ResponseHead(benchmark::State& state) {
  const std::string common =
      "Server: rill/0.1.0\r\nX-Rill-Worker: 0\r\nDate: Thu, 03 Dec 2026 16:09:25 GMT\r\n";
  for (auto _ : state) {
    http::ResponseHeaders h;
    h.add("Content-Type", "application/vnd.apple.mpegurl");
    h.add("Cache-Control", "max-age=1");
    h.add("Access-Control-Allow-Origin", "*");
    h.add("Access-Control-Expose-Headers", "Content-Length, Content-Type, Server");
    http::ResponseHeadParts p;
    p.common = &common;
    p.headers = &h;
    p.content_length = 161;
    BufferRef head = http::render_response_head(p);
    benchmark::DoNotOptimize(head);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ResponseHead);

}  // namespace
