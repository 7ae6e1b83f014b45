// The cluster (cluster/, config/cluster_config.h): its YAML keys and RTMP URLs, the timestamp
// rebase of a failover, the worker's relay registry and the gate's edge path. Bytes and values
// only: the integration tests (test_cluster.py) run real servers.
#include "rill/cluster/cluster.h"

#include <event2/event.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rill/cluster/timestamp_rebase.h"
#include "rill/config/cluster_config.h"
#include "rill/config/config.h"
#include "rill/core/event_timer_queue.h"
#include "rill/core/log.h"
#include "rill/media/stream.h"
#include "rill/net/flush_scheduler.h"
#include "rill/net/worker_core.h"
#include "rill/server/stream_gate.h"
#include "rill/workers/stream_locator.h"
#include "support/test_worker.h"

namespace rill::cluster {
namespace {

using config::parse_rtmp_url;

std::string config_error(const std::string& yaml) {
  try {
    config::load_config_string(yaml, "t.yaml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError for:\n" << yaml;
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "in: " << (haystack)

// ---- URLs and keys ---------------------------------------------------------------------------

TEST(RtmpUrl, ParsesHostPortAppAndName) {
  auto u = parse_rtmp_url("rtmp://10.0.0.1:1936/live");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "10.0.0.1");
  EXPECT_EQ(u->port, 1936);
  EXPECT_EQ(u->app, "live");
  EXPECT_EQ(u->name, "");
  EXPECT_EQ(config::stream_url(*u, "cam"), "rtmp://10.0.0.1:1936/live/cam");

  u = parse_rtmp_url("rtmp://[::1]/live/cam1");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 1935);
  EXPECT_EQ(u->name, "cam1");
  EXPECT_EQ(config::stream_url(*u, "other"), "rtmp://[::1]:1935/live/cam1");  // the URL names it
}

TEST(RtmpUrl, RefusesWhatIsNotAnRtmpAppUrl) {
  std::string error;
  for (const char* bad : {"http://h/live", "rtmp://h", "rtmp://:1935/live", "rtmp://h:0/live", "rtmp://h:99999/live",
                          "rtmp://h:x/live", "rtmp://h/../x", "rtmp://h/live/a/b", "rtmp://h/", "rtmp://[::1/live",
                          "rtmp://h h/live", "rtmp://h:/live"}) {
    EXPECT_FALSE(parse_rtmp_url(bad, &error)) << bad;
    EXPECT_CONTAINS(error, "expected rtmp[s]://HOST[:PORT]/APP[/NAME]");
  }
}

TEST(RtmpUrl, RtmpsDefaultsToPort443) {
  auto u = parse_rtmp_url("rtmps://origin.example.com/live");
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->host, "origin.example.com");
  EXPECT_EQ(config::stream_url(*u, "cam"), "rtmps://origin.example.com:443/live/cam");
  u = parse_rtmp_url("rtmps://localhost:8443/live/x");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 8443);
  EXPECT_FALSE(parse_rtmp_url("rtmpss://h/live"));
  EXPECT_FALSE(parse_rtmp_url("rtmp://h/live")->tls);
}

TEST(ClusterConfig, RtmpsRelayOptions) {
  const std::string ca = testing::TempDir() + "/rill_relay_ca_test.pem";
  { std::ofstream(ca) << "not parsed by the config\n"; }
  const auto cfg = config::load_config_string(
      "apps:\n  live:\n    edge:\n      origins: [\"rtmps://o1/live\", \"rtmp://o2/live\"]\n"
      "      tls_ca_file: " +
          ca +
          "\n"
          "    push:\n      - {url: \"rtmps://p/live\", tls_verify: false}\n"
          "    pull:\n      - {url: \"rtmps://q:1936/live/a\"}\n",
      "t");
  const config::AppConfig& app = cfg.apps.at("live");
  EXPECT_EQ(app.edge->origins[0].tls_ca_file, std::optional<std::string>(ca));
  EXPECT_TRUE(app.edge->origins[0].tls_verify);
  EXPECT_FALSE(app.edge->origins[1].tls);
  EXPECT_FALSE(app.edge->origins[1].tls_ca_file);
  EXPECT_FALSE(app.push[0].url.tls_verify);
  EXPECT_TRUE(app.pull[0].url.tls && app.pull[0].url.tls_verify && !app.pull[0].url.tls_ca_file);
  EXPECT_CONTAINS(
      config_error("apps:\n  live:\n    push:\n      - {url: \"rtmp://p/live\", tls_verify: false}\n"),
      "tls_verify is for rtmps:// URLs only");
  EXPECT_CONTAINS(
      config_error("apps:\n  live:\n    push:\n      - {url: \"rtmps://p/live\", tls_verify: false, "
                   "tls_ca_file: " +
                   ca + "}\n"),
      "tls_ca_file with tls_verify: false");
  std::remove(ca.c_str());
  EXPECT_CONTAINS(
      config_error("apps:\n  live:\n    pull:\n      - {url: \"rtmps://q/live/a\", tls_ca_file: " + ca +
                   "}\n"),
      "cannot read tls_ca_file " + ca);
}

TEST(ClusterConfig, ReadsEdgePushAndPull) {
  const auto cfg = config::load_config_string(R"(
apps:
  live:
    edge:
      origins: ["rtmp://127.0.0.1:1935/live", "rtmp://127.0.0.2:1935/live"]
      connect_timeout: 1500ms
      idle_close: 3s
      publish: local
    push:
      - url: rtmp://127.0.0.3/backup
        reconnect: 1s
    pull:
      - url: rtmp://127.0.0.4/live/cam1
        name: cam
)",
                                              "t.yaml");
  const config::AppConfig& app = cfg.apps.at("live");
  ASSERT_TRUE(app.edge);
  ASSERT_EQ(app.edge->origins.size(), 2u);
  EXPECT_EQ(app.edge->origins[1].host, "127.0.0.2");
  EXPECT_EQ(app.edge->connect_timeout.count(), 1500);
  EXPECT_EQ(app.edge->idle_close.count(), 3000);
  EXPECT_EQ(app.edge->publish, config::EdgePublish::Local);
  ASSERT_EQ(app.push.size(), 1u);
  EXPECT_EQ(app.push[0].url.app, "backup");
  EXPECT_EQ(app.push[0].reconnect.count(), 1000);
  ASSERT_EQ(app.pull.size(), 1u);
  EXPECT_EQ(app.pull[0].name, "cam");
  EXPECT_EQ(app.pull[0].url.name, "cam1");
}

TEST(ClusterConfig, DefaultsAndNoCluster) {
  const auto cfg = config::load_config_string("apps:\n  live:\n    edge:\n      origins: rtmp://127.0.0.1/live\n", "t");
  const config::AppConfig& app = cfg.apps.at("live");
  ASSERT_TRUE(app.edge);
  EXPECT_EQ(app.edge->connect_timeout.count(), 2000);
  EXPECT_EQ(app.edge->idle_close.count(), 10000);
  EXPECT_EQ(app.edge->publish, config::EdgePublish::Forward);
  EXPECT_FALSE(config::load_config_string("apps:\n  live: {}\n", "t").apps.at("live").edge);
}

TEST(ClusterConfig, ErrorsNameTheKey) {
  EXPECT_CONTAINS(config_error("apps:\n  live:\n    edge: {}\n"), "apps.live.edge: missing: origins");
  EXPECT_CONTAINS(config_error("apps:\n  live:\n    edge:\n      origins: []\n"), "at least one origin");
  EXPECT_CONTAINS(config_error("apps:\n  live:\n    edge:\n      origins: [\"rtmp://h/live/x\"]\n"),
                  "an origin is an app URL");
  EXPECT_CONTAINS(config_error("apps:\n  live:\n    edge:\n      origins: [\"rtmp://h/live\"]\n      publish: yes\n"),
                  "apps.live.edge.publish");
  EXPECT_CONTAINS(config_error("apps:\n  live:\n    edge:\n      origins: [\"rtmp://h/live\"]\n      idel_close: 1s\n"),
                  "did you mean 'idle_close'");
  EXPECT_CONTAINS(config_error("apps:\n  live:\n    push:\n      - reconnect: 1s\n"), "apps.live.push[0]: missing: url");
  EXPECT_CONTAINS(config_error("apps:\n  live:\n    push:\n      - url: ftp://x/y\n"), "apps.live.push[0].url");
  EXPECT_CONTAINS(config_error("apps:\n  live:\n    push: rtmp://h/live\n"), "expected a list of maps");
  EXPECT_CONTAINS(config_error("apps:\n  live:\n    pull:\n      - url: rtmp://h/live\n"), "missing: name");
  EXPECT_CONTAINS(config_error("apps:\n  live:\n    pull:\n      - url: rtmp://h/live/a\n      - url: rtmp://g/live/a\n"),
                  "two pulls feed stream 'a'");
}

// ---- TimestampRebase -------------------------------------------------------------------------

TEST(TimestampRebase, FirstUpstreamPassesThrough) {
  TimestampRebase r;
  r.new_upstream();
  EXPECT_EQ(r.map(5000, 100), 5000u);
  EXPECT_EQ(r.map(5040, 140), 5040u);
  EXPECT_EQ(r.last(), 5040u);
}

TEST(TimestampRebase, FailoverContinuesAtTheLiveEdgeAndSqueezesTheBurst) {
  TimestampRebase r(1000);
  r.new_upstream();
  for (int i = 0; i <= 25; ++i) r.map(1000 + 40 * i, 10'000 + 40 * i);  // up to ts 2000 at t 11'000
  // The origin dies; 300 ms later the backup answers with its GOP: 20 frames from ts 90'000,
  // all at once, then live frames in real time.
  r.new_upstream();
  uint32_t prev = r.last();
  const uint32_t first = r.map(90'000, 11'300);
  EXPECT_EQ(first, 2300u);  // the last timestamp + the time without media
  prev = first;
  for (int i = 1; i < 20; ++i) {
    const uint32_t out = r.map(90'000 + 40 * i, 11'300);
    EXPECT_GE(out, 2001u);
    EXPECT_LE(out, 2300u + 1);  // squeezed onto "now", not spread one GOP into the future
    prev = out;
  }
  // Live frames after the burst follow the wall clock: not behind live.
  const uint32_t live = r.map(90'000 + 40 * 20, 11'340);
  EXPECT_NEAR(static_cast<double>(live), 2340.0, 2.0);
  EXPECT_GE(live, prev);
  // After the catch-up window the upstream's own deltas are kept.
  EXPECT_EQ(r.map(90'000 + 40 * 20 + 5000, 16'400), live + 5000);
}

TEST(TimestampRebase, FollowsThe32BitWrap) {
  TimestampRebase r;
  r.new_upstream();
  EXPECT_EQ(r.map(0xFFFFFFF0u, 0), 0xFFFFFFF0u);
  EXPECT_EQ(r.map(0x00000010u, 32), 0x00000010u);
}

// ---- the relay registry and the gate's edge path ----------------------------------------------

class ClusterTest : public ::testing::Test {
 protected:
  ClusterTest()
      : worker_(config::load_config_string(
            "apps:\n  live: {}\n  edge:\n    edge:\n      origins: [\"rtmp://127.0.0.1:1/edge\"]\n"
            "      connect_timeout: 200ms\n",
            "t.yaml")),
        core_(worker_.core()),
        streams_(worker_.streams()) {
    locator_ = std::make_unique<workers::StreamLocator>(core_, workers::LocatorOptions{});
    cluster_ = std::make_unique<Cluster>(core_, *locator_);
    gate_ = std::make_unique<server::StreamGate>(core_, *locator_, cluster_.get());
  }
  ~ClusterTest() override {
    gate_.reset();
    cluster_.reset();
    locator_.reset();
  }
  // Runs the loop until pred() or ~5 s (the upstream here is a refused loopback port).
  template <class P>
  void run_until(P pred) {
    worker_.run_until(pred);
  }

  testsupport::TestWorker worker_;  // first: outlives the services below
  net::WorkerCore& core_;
  media::StreamRegistry& streams_;
  std::unique_ptr<workers::StreamLocator> locator_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<server::StreamGate> gate_;
};

TEST_F(ClusterTest, CreateListRemove) {
  RelayCreated bad = cluster_->create({RelayKind::Pull, "nope", "cam", "rtmp://127.0.0.1:1/live/cam", ""});
  EXPECT_FALSE(bad.id);
  EXPECT_CONTAINS(bad.error, "unknown app 'nope'");
  bad = cluster_->create({RelayKind::Pull, "live", "cam", "http://x/y", ""});
  EXPECT_CONTAINS(bad.error, "expected rtmp[s]://");
  bad = cluster_->create({RelayKind::EdgePull, "live", "cam", "rtmp://127.0.0.1:1/live", ""});
  EXPECT_CONTAINS(bad.error, "kind must be push or pull");

  RelayCreated pull = cluster_->create({RelayKind::Pull, "live", "cam", "rtmp://127.0.0.1:1/live", ""});
  ASSERT_TRUE(pull.id) << pull.error;
  RelayCreated push = cluster_->create({RelayKind::Push, "live", "cam", "rtmp://127.0.0.1:1/backup", ""});
  ASSERT_TRUE(push.id) << push.error;
  EXPECT_NE(*pull.id, *push.id);

  // The pull is the publisher of live/cam, so the push runs on it at once.
  std::vector<RelayInfo> relays = cluster_->relays();
  ASSERT_EQ(relays.size(), 2u);
  const RelayInfo& p = relays[0].kind == RelayKind::Pull ? relays[0] : relays[1];
  const RelayInfo& q = relays[0].kind == RelayKind::Pull ? relays[1] : relays[0];
  EXPECT_EQ(p.id, *pull.id);
  EXPECT_EQ(p.app, "live");
  EXPECT_EQ(p.name, "cam");
  EXPECT_EQ(p.url, "rtmp://127.0.0.1:1/live/cam");
  EXPECT_EQ(p.state, RelayState::Connecting);
  EXPECT_EQ(q.id, *push.id);
  EXPECT_EQ(q.kind, RelayKind::Push);
  EXPECT_EQ(q.url, "rtmp://127.0.0.1:1/backup/cam");

  // The pull owns the stream as its publisher: a local publish of the name is refused.
  ASSERT_NE(streams_.find(media::StreamKey{"live", "cam"}), nullptr);
  EXPECT_TRUE(streams_.find(media::StreamKey{"live", "cam"})->has_publisher());

  // The refused port fails the round; a static pull keeps retrying.
  auto state_of = [&](const std::string& id) {
    for (const RelayInfo& r : cluster_->relays()) {
      if (r.id == id) return r.state;
    }
    return RelayState::Closed;
  };
  run_until([&] { return state_of(*pull.id) == RelayState::Retrying && state_of(*push.id) == RelayState::Retrying; });
  EXPECT_EQ(state_of(*pull.id), RelayState::Retrying);
  EXPECT_EQ(state_of(*push.id), RelayState::Retrying);

  EXPECT_TRUE(cluster_->remove(*pull.id));
  EXPECT_TRUE(cluster_->remove(*push.id));
  EXPECT_FALSE(cluster_->remove(*push.id));
  EXPECT_FALSE(cluster_->remove("w0-999"));
  run_until([&] { return cluster_->relays().empty(); });
  EXPECT_TRUE(cluster_->relays().empty());  // the cancelled push left with its stream's publisher
  EXPECT_EQ(streams_.find(media::StreamKey{"live", "cam"}), nullptr);  // the publisher left
}

// The control plane's view (workers::RelayControl): ids chosen by the API, rows, removal.
TEST_F(ClusterTest, RelayControlUsesTheGivenId) {
  workers::RelayControl& rc = *cluster_;
  EXPECT_EQ(rc.add_relay("r7", "dvr", "live", "cam", "rtmp://127.0.0.1:1/live"), "kind must be push or pull");
  EXPECT_CONTAINS(rc.add_relay("r7", "pull", "nope", "cam", "rtmp://127.0.0.1:1/live"), "unknown app");
  EXPECT_EQ(rc.add_relay("r7", "pull", "live", "cam", "rtmp://127.0.0.1:1/live"), "");
  EXPECT_EQ(rc.add_relay("r7", "push", "live", "cam", "rtmp://127.0.0.1:1/live"), "relay r7 exists");
  const std::vector<RelayInfo> rows = rc.relays();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id, "r7");
  EXPECT_EQ(rows[0].kind, RelayKind::Pull);
  EXPECT_EQ(rows[0].state, RelayState::Connecting);
  EXPECT_TRUE(rc.remove_relay("r7"));
  EXPECT_FALSE(rc.remove_relay("r7"));
  run_until([&] { return cluster_->relays().empty(); });
}

TEST_F(ClusterTest, EdgePlayWithNoOriginIsNotFound) {
  server::AdmissionRequest req;
  req.proto = server::GateProto::Rtmp;
  req.key = media::StreamKey{"edge", "cam"};
  std::optional<server::GateDecision> decision;
  gate_->admit_play(req, [&](server::GateDecision d) { decision = std::move(d); });
  EXPECT_FALSE(decision);  // waits for the pull
  ASSERT_EQ(cluster_->relays().size(), 1u);
  EXPECT_EQ(cluster_->relays()[0].kind, RelayKind::EdgePull);
  // A second player joins the same pull: one upstream.
  std::optional<server::GateDecision> second;
  gate_->admit_play(req, [&](server::GateDecision d) { second = std::move(d); });
  EXPECT_EQ(cluster_->relays().size(), 1u);
  run_until([&] { return decision.has_value() && second.has_value(); });
  ASSERT_TRUE(decision);
  EXPECT_EQ(decision->verdict, server::Verdict::NotFound);
  EXPECT_CONTAINS(decision->reason, "no origin has stream edge/cam");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->verdict, server::Verdict::NotFound);
  run_until([&] { return cluster_->relays().empty(); });
  EXPECT_TRUE(cluster_->relays().empty());
}

TEST_F(ClusterTest, ProbesStartNoPull) {
  server::AdmissionRequest req;
  req.key = media::StreamKey{"edge", "cam"};
  req.probe = true;
  std::optional<server::GateDecision> d;
  gate_->admit_play(req, [&](server::GateDecision x) { d = std::move(x); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, server::Verdict::NotFound);
  EXPECT_TRUE(cluster_->relays().empty());
}

}  // namespace
}  // namespace rill::cluster
