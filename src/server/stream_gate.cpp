#include "rill/server/stream_gate.h"

#include "rill/cluster/cluster.h"
#include "rill/media/hls_store.h"
#include "rill/workers/stream_locator.h"

namespace rill::server {

namespace {

GateDecision decision(Verdict v, media::Stream* s, std::string reason) {
  GateDecision d;
  d.verdict = v;
  d.stream = s;
  d.reason = std::move(reason);
  return d;
}

GateDecision refused_by_check(const std::string& why) {
  GateDecision d = decision(Verdict::Refused, nullptr, why);
  d.unauthorized = true;
  return d;
}

}  // namespace

const char* to_string(GateProto p) {
  switch (p) {
    case GateProto::Rtmp:
      return "rtmp";
    case GateProto::HttpFlv:
      return "flv";
    case GateProto::Hls:
      return "hls";
    case GateProto::EdgePull:
      return "edge-pull";
  }
  return "?";
}

const char* to_string(GateAction a) { return a == GateAction::Publish ? "publish" : "play"; }

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::Admitted:
      return "admitted";
    case Verdict::Refused:
      return "refused";
    case Verdict::Busy:
      return "busy";
    case Verdict::NotFound:
      return "not found";
  }
  return "?";
}

StreamGate::StreamGate(net::WorkerCore& ctx, workers::StreamLocator& locator, cluster::Cluster* cluster)
    : ctx_(ctx), locator_(locator), cluster_(cluster) {}

StreamGate::~StreamGate() {
  // Checks go first: one may still hold a done() of a pending request, which must find the gate
  // gone (alive_) rather than dangling.
  *alive_ = false;
  checks_.clear();
}

void StreamGate::add_check(std::unique_ptr<AdmissionCheck> check) { checks_.push_back(std::move(check)); }

StreamGate::Ticket StreamGate::admit_publish(AdmissionRequest req, const void* publisher, Callback done) {
  return start(Pending{std::move(req), GateAction::Publish, publisher, std::move(done), 0});
}

StreamGate::Ticket StreamGate::admit_play(AdmissionRequest req, Callback done) {
  return start(Pending{std::move(req), GateAction::Play, nullptr, std::move(done), 0});
}

void StreamGate::cancel(Ticket t) { pending_.erase(t); }

void StreamGate::publish_ended(const media::StreamKey& key) {
  locator_.released(key);
  for (auto& check : checks_) check->publish_ended(key);
}

StreamGate::Ticket StreamGate::start(Pending p) {
  if (auto d = decide_now(p.req, p.action, p.publisher)) {
    p.done(std::move(*d));
    return 0;  // 0: no ticket (cancel ignores it)
  }
  const Ticket t = next_ticket_++;
  pending_.emplace(t, std::move(p));
  run_checks(t);
  return t;
}

std::optional<GateDecision> StreamGate::decide_play_now(AdmissionRequest& req) {
  return decide_now(req, GateAction::Play, nullptr);
}

std::optional<GateDecision> StreamGate::decide_now(AdmissionRequest& req, GateAction action,
                                                   const void* publisher) {
  if (!req.app) req.app = ctx_.config->find_app(req.key.app);
  for (const auto& check : checks_) {
    if (check->applies(req, action)) return std::nullopt;
  }
  if (needs_pull(req, action)) return std::nullopt;
  if (req.app && req.app->edge && cluster_ && req.proto == GateProto::Hls) cluster_->touch(req.key);
  GateDecision d = place(req, action, publisher);
  d.key = req.key;
  d.app = req.app;
  for (auto& check : checks_) check->decided(req, action, d);
  return d;
}

// Runs the checks from the request's next one. A check that answers inside check() is continued
// here (no recursion through done()); one that answers later resumes through on_check_done().
void StreamGate::run_checks(Ticket t) {
  for (;;) {
    auto it = pending_.find(t);
    if (it == pending_.end()) return;  // cancelled
    Pending& p = it->second;
    while (p.next_check < checks_.size() && !checks_[p.next_check]->applies(p.req, p.action)) ++p.next_check;
    if (p.next_check == checks_.size()) return place_or_pull(t);
    AdmissionCheck& check = *checks_[p.next_check++];
    running_ = t;
    answered_inline_ = false;
    inline_answer_ = CheckAnswer{};
    std::weak_ptr<bool> alive = alive_;
    check.check(p.req, p.action, [this, alive, t](CheckAnswer answer) {
      if (auto a = alive.lock(); a && *a) on_check_done(t, std::move(answer));
    });
    const bool inline_answer = running_ == t && answered_inline_;
    running_ = 0;
    if (!inline_answer) return;  // on_check_done continues later
    if (!apply(t, check.name(), std::move(inline_answer_))) return;
  }
}

void StreamGate::on_check_done(Ticket t, CheckAnswer answer) {
  if (running_ == t) {
    answered_inline_ = true;
    inline_answer_ = std::move(answer);
    return;
  }
  auto it = pending_.find(t);
  if (it == pending_.end()) return;  // cancelled meanwhile
  if (apply(t, checks_[it->second.next_check - 1]->name(), std::move(answer))) run_checks(t);
}

bool StreamGate::apply(Ticket t, const char* check, CheckAnswer answer) {
  if (answer.refusal) {
    refuse(t, check, *answer.refusal);
    return false;
  }
  if (!answer.rename) return true;
  Pending& p = pending_.at(t);
  std::string why;
  auto renamed = media::StreamKey::make(p.req.key.app, *answer.rename, &why);
  if (!renamed) {
    refuse(t, check, "renamed to an invalid name '" + answer.rename->substr(0, 200) + "': " + why);
    return false;
  }
  ctx_.log->info("gate: {} {} {} renamed to {} by {}", p.req.peer, to_string(p.action), p.req.key.str(),
                 renamed->str(), check);
  p.req.key = std::move(*renamed);
  return true;
}

void StreamGate::refuse(Ticket t, const char* check, const std::string& why) {
  auto it = pending_.find(t);
  if (it == pending_.end()) return;
  const AdmissionRequest& r = it->second.req;
  ctx_.log->warn("gate: {} {} {} over {} refused by {}: {}", r.peer, to_string(it->second.action),
                 r.key.str(), to_string(r.proto), check, why);
  finish(t, refused_by_check(why));
}

void StreamGate::finish(Ticket t, GateDecision d) {
  auto it = pending_.find(t);
  if (it == pending_.end()) return;
  Callback done = std::move(it->second.done);
  d.key = it->second.req.key;
  d.app = it->second.req.app;
  for (auto& check : checks_) check->decided(it->second.req, it->second.action, d);
  pending_.erase(it);
  done(std::move(d));
}

// A play in an edge app of a stream nobody on this server has: the one upstream pull starts (or
// is joined) first, and the request is placed once media flows — or told "not found" when no
// origin has the stream (docs/cluster.md).
void StreamGate::place_or_pull(Ticket t) {
  const Pending& p = pending_.at(t);
  const config::AppConfig* app = p.req.app;
  if (!needs_pull(p.req, p.action)) {
    if (app && app->edge && cluster_ && p.req.proto == GateProto::Hls) cluster_->touch(p.req.key);
    return finish(t, place(p.req, p.action, p.publisher));
  }
  std::weak_ptr<bool> alive = alive_;
  cluster_->edge_play(p.req.key, *app, [this, alive, t](bool found) {
    if (auto a = alive.lock(); !a || !*a) return;
    auto it = pending_.find(t);
    if (it == pending_.end()) return;  // cancelled meanwhile
    if (!found) {
      return finish(t,
                    decision(Verdict::NotFound, nullptr, "no origin has stream " + it->second.req.key.str()));
    }
    finish(t, place(it->second.req, it->second.action, it->second.publisher));
  });
}

bool StreamGate::needs_pull(const AdmissionRequest& req, GateAction action) const {
  const config::AppConfig* app = req.app;
  if (action != GateAction::Play || req.probe || !app || !app->edge || !cluster_) return false;
  const media::Stream* local = ctx_.streams->find(req.key);
  if (local && local->has_publisher()) return cluster_->pull_pending(req.key);  // join its wait
  if (req.proto == GateProto::Hls) {
    // The stream ended at the origin: its last playlist (with #EXT-X-ENDLIST) is served until
    // the HLS grace drops it, rather than a new pull reopening it.
    const media::HlsStreamState* hls = ctx_.streams->hls().find(req.key.app, req.key.name);
    if (hls && !hls->live() && hls->has_segments()) return false;
    // So does another worker of this server that keeps it (the one that pulled the stream).
    return !locator_.hls_source(req.key.str());
  }
  return !locator_.remote_owner(req.key.str());
}

GateDecision StreamGate::place(const AdmissionRequest& req, GateAction action, const void* publisher) {
  const config::AppConfig* app = req.app;
  if (!app) return decision(Verdict::NotFound, nullptr, "unknown app " + req.key.app);
  return action == GateAction::Publish ? place_publish(req, publisher, *app) : place_play(req, *app);
}

// Claimed across workers: a second publisher of the name is refused on any worker.
GateDecision StreamGate::place_publish(const AdmissionRequest& req, const void* publisher,
                                       const config::AppConfig& app) {
  if (app.edge && app.edge->publish == config::EdgePublish::Refuse) {
    return decision(Verdict::Refused, nullptr, "app " + app.name + " is an edge that takes no publish");
  }
  workers::PublishClaim claim = locator_.claim_for_publish(req.key, app, publisher);
  switch (claim.result) {
    case workers::ClaimResult::Ok:
      return decision(Verdict::Admitted, claim.stream, {});
    case workers::ClaimResult::Busy:
      return decision(Verdict::Busy, nullptr, claim.reason);
    case workers::ClaimResult::Invalid:
      break;
  }
  return decision(Verdict::Refused, nullptr, claim.reason);
}

// The local stream, or one fed by a worker link from the worker that owns it. With no publisher
// anywhere the player waits for one (play_wait) or is told at once (SRS #1134: a player retries).
GateDecision StreamGate::place_play(const AdmissionRequest& req, const config::AppConfig& app) {
  if (req.proto == GateProto::Hls) {
    // Served from the HLS store (this worker's or the owner's, by the HLS handler).
    return decision(Verdict::Admitted, nullptr, {});
  }
  if (req.probe) {
    const media::Stream* local = ctx_.streams->find(req.key);
    const bool live = (local && local->has_publisher()) || locator_.remote_owner(req.key.str());
    if (live || app.play_wait.count() > 0) return decision(Verdict::Admitted, nullptr, {});
    return decision(Verdict::NotFound, nullptr, "stream " + req.key.str() + " is not published");
  }
  media::Stream* existing = locator_.find_for_play(req.key, app);
  const bool live = existing && existing->has_publisher();
  if (!live && app.play_wait.count() == 0) {
    return decision(Verdict::NotFound, nullptr, "stream " + req.key.str() + " is not published");
  }
  media::Stream& s = existing ? *existing : ctx_.streams->get_or_create(req.key, app);
  return decision(Verdict::Admitted, &s, {});
}

}  // namespace rill::server
