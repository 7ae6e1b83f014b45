// StreamGate: the one admission point (server/stream_gate.h) — checks in order, answers now or
// later, cancellation, and placement through the StreamLocator of a single worker.
#include "rill/server/stream_gate.h"

#include <event2/event.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rill/core/event_timer_queue.h"
#include "rill/core/log.h"
#include "rill/media/stream.h"
#include "rill/media/stream_output.h"
#include "rill/net/flush_scheduler.h"
#include "rill/net/worker_core.h"
#include "rill/workers/stream_locator.h"
#include "support/test_worker.h"

namespace rill::server {
namespace {

// A check that records what it saw and answers as told: at once, or when release() is called.
class ScriptedCheck final : public AdmissionCheck {
 public:
  ScriptedCheck(std::string name, std::optional<std::string> refusal, bool deferred)
      : name_(std::move(name)), refusal_(std::move(refusal)), deferred_(deferred) {}
  const char* name() const override { return name_.c_str(); }
  bool applies(const AdmissionRequest&, GateAction) const override { return applies_; }
  void check(const AdmissionRequest& req, GateAction action, Done done) override {
    seen.push_back(req);
    actions.push_back(action);
    if (deferred_) {
      held.push_back(std::move(done));
    } else {
      done(refusal_);
    }
  }
  void release(std::optional<std::string> refusal = std::nullopt) {
    auto d = std::move(held.front());
    held.erase(held.begin());
    d(std::move(refusal));
  }
  std::vector<AdmissionRequest> seen;
  std::vector<GateAction> actions;
  std::vector<Done> held;
  bool applies_ = true;

 private:
  std::string name_;
  std::optional<std::string> refusal_;
  bool deferred_;
};

class StreamGateTest : public ::testing::Test {
 protected:
  StreamGateTest() : worker_(gate_config()), core_(worker_.core()), streams_(worker_.streams()) {
    locator_ = std::make_unique<workers::StreamLocator>(core_, workers::LocatorOptions{});
    gate_ = std::make_unique<StreamGate>(core_, *locator_, nullptr);
  }
  ~StreamGateTest() override {
    gate_.reset();
    locator_.reset();
  }

  static config::Config gate_config() {
    config::Config cfg;
    config::AppConfig live;
    live.name = "live";
    cfg.apps["live"] = live;
    config::AppConfig waits = live;
    waits.name = "waits";
    waits.play_wait = std::chrono::milliseconds(5000);
    cfg.apps["waits"] = waits;
    return cfg;
  }

  static AdmissionRequest request(const std::string& app, const std::string& name,
                                  GateProto p = GateProto::Rtmp) {
    AdmissionRequest r;
    r.proto = p;
    r.key = media::StreamKey{app, name};
    r.peer = "127.0.0.1:5000";
    r.query = "token=abc";
    r.session_id = 42;
    return r;
  }
  // The decision of one request, or nullopt while none came.
  std::optional<GateDecision> publish(const std::string& name, const void* who,
                                      StreamGate::Ticket* t = nullptr) {
    auto out = std::make_shared<std::optional<GateDecision>>();
    auto ticket =
        gate_->admit_publish(request("live", name), who, [out](GateDecision d) { *out = std::move(d); });
    if (t) *t = ticket;
    return *out;
  }

  testsupport::TestWorker worker_;  // first: outlives the services below
  net::WorkerCore& core_;
  media::StreamRegistry& streams_;
  std::unique_ptr<workers::StreamLocator> locator_;
  std::unique_ptr<StreamGate> gate_;
  int publisher_a_ = 0, publisher_b_ = 0;
};

TEST_F(StreamGateTest, PublishIsPlacedAndASecondPublisherIsBusy) {
  auto a = publish("cam", &publisher_a_);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->verdict, Verdict::Admitted);
  ASSERT_NE(a->stream, nullptr);
  EXPECT_TRUE(a->stream->has_publisher());
  auto b = publish("cam", &publisher_b_);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->verdict, Verdict::Busy);
  EXPECT_EQ(b->stream, nullptr);
  EXPECT_FALSE(b->reason.empty());
  // Once the first publisher left, the name is free again.
  a->stream->detach_publisher(&publisher_a_);
  gate_->publish_ended(media::StreamKey{"live", "cam"});
  auto c = publish("cam", &publisher_b_);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->verdict, Verdict::Admitted);
  c->stream->detach_publisher(&publisher_b_);
  gate_->publish_ended(media::StreamKey{"live", "cam"});
}

TEST_F(StreamGateTest, PlayIsNotFoundUnlessPublishedOrTheAppWaits) {
  std::optional<GateDecision> d;
  gate_->admit_play(request("live", "cam"), [&](GateDecision x) { d = std::move(x); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::NotFound);
  EXPECT_EQ(d->reason, "stream live/cam is not published");

  auto p = publish("cam", &publisher_a_);
  d.reset();
  gate_->admit_play(request("live", "cam", GateProto::HttpFlv), [&](GateDecision x) { d = std::move(x); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::Admitted);
  EXPECT_EQ(d->stream, p->stream);

  d.reset();  // play_wait > 0: admitted to a stream that waits for its publisher
  gate_->admit_play(request("waits", "later"), [&](GateDecision x) { d = std::move(x); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::Admitted);
  ASSERT_NE(d->stream, nullptr);
  EXPECT_FALSE(d->stream->has_publisher());
  p->stream->detach_publisher(&publisher_a_);
  gate_->publish_ended(media::StreamKey{"live", "cam"});
}

TEST_F(StreamGateTest, HlsAndUnknownApps) {
  std::optional<GateDecision> d;
  gate_->admit_play(request("live", "cam", GateProto::Hls), [&](GateDecision x) { d = std::move(x); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::Admitted);  // served from the HLS store by the handler
  EXPECT_EQ(d->stream, nullptr);
  d.reset();
  gate_->admit_play(request("nosuchapp", "cam"), [&](GateDecision x) { d = std::move(x); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::NotFound);
  EXPECT_EQ(d->reason, "unknown app nosuchapp");
}

TEST_F(StreamGateTest, ChecksRunInOrderAndTheFirstRefusalWins) {
  auto* first = new ScriptedCheck("first", std::nullopt, false);
  auto* second = new ScriptedCheck("second", std::string("bad token"), false);
  auto* third = new ScriptedCheck("third", std::nullopt, false);
  gate_->add_check(std::unique_ptr<AdmissionCheck>(first));
  gate_->add_check(std::unique_ptr<AdmissionCheck>(second));
  gate_->add_check(std::unique_ptr<AdmissionCheck>(third));
  auto d = publish("cam", &publisher_a_);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::Refused);
  EXPECT_EQ(d->reason, "bad token");
  EXPECT_EQ(first->seen.size(), 1u);
  EXPECT_EQ(second->seen.size(), 1u);
  EXPECT_EQ(third->seen.size(), 0u);
  // What a check sees: the key, the kept query, the peer, the protocol and the action.
  EXPECT_EQ(first->seen[0].key, (media::StreamKey{"live", "cam"}));
  EXPECT_EQ(first->seen[0].query, "token=abc");
  EXPECT_EQ(first->seen[0].peer, "127.0.0.1:5000");
  EXPECT_EQ(first->seen[0].session_id, 42u);
  EXPECT_EQ(first->actions[0], GateAction::Publish);
  // Refused: nothing was claimed.
  EXPECT_EQ(streams_.find(media::StreamKey{"live", "cam"}), nullptr);
}

TEST_F(StreamGateTest, ACheckThatDoesNotApplyIsPassedOverWithoutACall) {
  auto* skipped = new ScriptedCheck("skipped", std::string("would refuse"), false);
  skipped->applies_ = false;
  auto* later = new ScriptedCheck("later", std::string("refused later"), true);
  auto* also_skipped = new ScriptedCheck("also skipped", std::string("would refuse"), false);
  also_skipped->applies_ = false;
  gate_->add_check(std::unique_ptr<AdmissionCheck>(skipped));
  gate_->add_check(std::unique_ptr<AdmissionCheck>(later));
  gate_->add_check(std::unique_ptr<AdmissionCheck>(also_skipped));
  std::optional<GateDecision> d;
  gate_->admit_play(request("live", "cam", GateProto::Hls), [&](GateDecision x) { d = std::move(x); });
  EXPECT_FALSE(d);  // the applying check answers later
  EXPECT_EQ(skipped->seen.size(), 0u);
  ASSERT_EQ(later->held.size(), 1u);
  later->release();  // allowed: the last check does not apply, so placement decides
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::Admitted);
  EXPECT_EQ(also_skipped->seen.size(), 0u);
  // With no applying check at all, placement answers inside admit_play().
  later->applies_ = false;
  d.reset();
  gate_->admit_play(request("live", "cam", GateProto::Hls), [&](GateDecision x) { d = std::move(x); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::Admitted);
  EXPECT_EQ(later->seen.size(), 1u);
}

// The app is looked up once, by the gate on entry (or given by the caller): checks read it from
// the request and the decision carries it on. A request no check applies to leaves no pending entry.
TEST_F(StreamGateTest, TheAppIsResolvedOnceAndCarriedToTheDecision) {
  auto* check = new ScriptedCheck("reads the app", std::nullopt, false);
  gate_->add_check(std::unique_ptr<AdmissionCheck>(check));
  std::optional<GateDecision> d;
  gate_->admit_play(request("live", "cam", GateProto::Hls), [&](GateDecision x) { d = std::move(x); });
  ASSERT_TRUE(d);
  ASSERT_EQ(check->seen.size(), 1u);
  ASSERT_NE(check->seen[0].app, nullptr);
  EXPECT_EQ(check->seen[0].app->name, "live");
  EXPECT_EQ(d->app, check->seen[0].app);
  check->applies_ = false;
  d.reset();
  EXPECT_EQ(gate_->admit_play(request("live", "cam", GateProto::Hls), [&](GateDecision x) { d = std::move(x); }),
            0u);  // answered at once: no ticket, nothing pending
  ASSERT_TRUE(d);
  EXPECT_EQ(d->app, check->seen[0].app);
  EXPECT_EQ(gate_->pending(), 0u);
  d.reset();
  gate_->admit_play(request("nope", "cam", GateProto::Hls), [&](GateDecision x) { d = std::move(x); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::NotFound);
  EXPECT_EQ(d->app, nullptr);
}

TEST_F(StreamGateTest, ADeferredCheckDecidesLater) {
  auto* later = new ScriptedCheck("callback", std::nullopt, true);
  gate_->add_check(std::unique_ptr<AdmissionCheck>(later));
  std::optional<GateDecision> d;
  gate_->admit_publish(request("live", "cam"), &publisher_a_, [&](GateDecision x) { d = std::move(x); });
  EXPECT_FALSE(d);
  EXPECT_EQ(gate_->pending(), 1u);
  EXPECT_EQ(streams_.find(media::StreamKey{"live", "cam"}), nullptr);  // placed only once allowed
  later->release();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::Admitted);
  EXPECT_EQ(gate_->pending(), 0u);
  d->stream->detach_publisher(&publisher_a_);
  gate_->publish_ended(media::StreamKey{"live", "cam"});

  d.reset();
  gate_->admit_play(request("live", "cam"), [&](GateDecision x) { d = std::move(x); });
  later->release(std::string("not on the list"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::Refused);
  EXPECT_EQ(d->reason, "not on the list");
}

TEST_F(StreamGateTest, ACancelledRequestIsNeverAnswered) {
  auto* later = new ScriptedCheck("callback", std::nullopt, true);
  gate_->add_check(std::unique_ptr<AdmissionCheck>(later));
  bool called = false;
  auto t = gate_->admit_publish(request("live", "cam"), &publisher_a_, [&](GateDecision) { called = true; });
  gate_->cancel(t);
  EXPECT_EQ(gate_->pending(), 0u);
  later->release();  // the session is gone: nothing happens, nothing is claimed
  EXPECT_FALSE(called);
  EXPECT_EQ(streams_.find(media::StreamKey{"live", "cam"}), nullptr);
  gate_->cancel(t);  // twice, or unknown: ignored
  gate_->cancel(12345);
}

TEST_F(StreamGateTest, ALateAnswerAfterTheGateIsGoneIsHarmless) {
  auto* later = new ScriptedCheck("callback", std::nullopt, true);
  gate_->add_check(std::unique_ptr<AdmissionCheck>(later));
  bool called = false;
  gate_->admit_play(request("live", "cam"), [&](GateDecision) { called = true; });
  AdmissionCheck::Done held = std::move(later->held.front());
  gate_.reset();  // destroys the check too
  held(std::nullopt);
  EXPECT_FALSE(called);
}

// A check that answers with a rename (an HTTP callback's 3xx Location) and records what it saw.
class RenamingCheck final : public AdmissionCheck {
 public:
  explicit RenamingCheck(std::string to) : to_(std::move(to)) {}
  const char* name() const override { return "rename"; }
  bool applies(const AdmissionRequest&, GateAction) const override { return true; }
  void check(const AdmissionRequest&, GateAction, Done done) override { done(CheckAnswer::renamed(to_)); }
  void decided(const AdmissionRequest& req, GateAction, const GateDecision& d) override {
    decided_keys.push_back(req.key);
    decided_verdicts.push_back(d.verdict);
  }
  std::vector<media::StreamKey> decided_keys;
  std::vector<Verdict> decided_verdicts;

 private:
  std::string to_;
};

TEST_F(StreamGateTest, ACheckMayRenameTheStream) {
  auto* rename = new RenamingCheck("other");
  auto* after = new ScriptedCheck("after", std::nullopt, false);
  gate_->add_check(std::unique_ptr<AdmissionCheck>(rename));
  gate_->add_check(std::unique_ptr<AdmissionCheck>(after));
  auto d = publish("cam", &publisher_a_);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::Admitted);
  EXPECT_EQ(d->key, (media::StreamKey{"live", "other"}));
  EXPECT_EQ(after->seen.at(0).key.name, "other");  // later checks see the new name
  EXPECT_NE(streams_.find(media::StreamKey{"live", "other"}), nullptr);
  EXPECT_EQ(streams_.find(media::StreamKey{"live", "cam"}), nullptr);
  ASSERT_EQ(rename->decided_keys.size(), 1u);  // every check is told the decision
  EXPECT_EQ(rename->decided_keys[0].name, "other");
  EXPECT_EQ(rename->decided_verdicts[0], Verdict::Admitted);
  d->stream->detach_publisher(&publisher_a_);
  gate_->publish_ended(media::StreamKey{"live", "other"});
}

TEST_F(StreamGateTest, ARenameToAnInvalidNameRefuses) {
  gate_->add_check(std::make_unique<RenamingCheck>("../x"));
  auto d = publish("cam", &publisher_a_);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::Refused);
  EXPECT_TRUE(d->unauthorized);
  EXPECT_NE(d->reason.find("invalid name"), std::string::npos);
}

TEST_F(StreamGateTest, ARefusalByACheckIsUnauthorizedAndAPlacementOneIsNot) {
  gate_->add_check(std::make_unique<ScriptedCheck>("token", std::string("wrong sign"), false));
  auto d = publish("cam", &publisher_a_);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->unauthorized);
  EXPECT_EQ(d->key, (media::StreamKey{"live", "cam"}));
}

}  // namespace
}  // namespace rill::server
