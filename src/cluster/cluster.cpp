#include "rill/cluster/cluster.h"

#include <algorithm>

#include "rill/config/cluster_config.h"
#include "rill/core/name_rule.h"

namespace rill::cluster {

Cluster::Cluster(net::WorkerCore& ctx, workers::StreamLocator& locator) : ctx_(ctx), locator_(locator) {}

Cluster::~Cluster() { stop(); }

std::string Cluster::next_id() {
  std::string id = "w";  // built piecewise: GCC 12 warns (-Wrestrict) on "w" + std::string(...)
  id += std::to_string(ctx_.worker_id);
  id += '-';
  id += std::to_string(++seq_);
  return id;
}

void Cluster::start() {
  for (const auto& [name, app] : ctx_.config->apps) {
    for (const config::PullSource& src : app.pull) {
      PullOptions o;
      o.id = next_id();
      o.key = media::StreamKey{app.name, src.name};
      o.app = &app;
      o.on_demand = false;
      o.sources = {src.url};
      o.connect_timeout_ms = app.edge ? app.edge->connect_timeout.count() : 5000;
      start_pull(std::move(o));
    }
  }
}

void Cluster::stop() {
  stopped_ = true;
  auto edge = std::move(edge_pulls_);
  auto stat = std::move(static_pulls_);
  edge_pulls_.clear();
  static_pulls_.clear();
  for (auto& [k, p] : edge) p->stop("worker stopping");
  for (auto& [k, p] : stat) p->stop("worker stopping");
}

StreamPull& Cluster::start_pull(PullOptions opts) {
  const bool on_demand = opts.on_demand;
  const std::string slot = on_demand ? opts.key.str() : opts.id;
  auto pull = std::make_unique<StreamPull>(ctx_, locator_, health_, std::move(opts), [this] { reap(); });
  StreamPull& p = *pull;
  (on_demand ? edge_pulls_ : static_pulls_)[slot] = std::move(pull);
  p.start();
  return p;
}

// Finished pulls go (from a timer: never inside their own callbacks).
void Cluster::reap() {
  for (auto* m : {&edge_pulls_, &static_pulls_}) {
    for (auto it = m->begin(); it != m->end();) it = it->second->finished() ? m->erase(it) : std::next(it);
  }
}

void Cluster::edge_play(const media::StreamKey& key, const config::AppConfig& app, StreamPull::Found found) {
  if (stopped_ || !app.edge) return found(false);
  auto it = edge_pulls_.find(key.str());
  if (it != edge_pulls_.end() && !it->second->finished()) return it->second->add_waiter(std::move(found));
  PullOptions o;
  o.id = next_id();
  o.key = key;
  o.app = &app;
  o.on_demand = true;
  o.sources = app.edge->origins;
  o.connect_timeout_ms = app.edge->connect_timeout.count();
  o.idle_close_ms = app.edge->idle_close.count();
  StreamPull& p = start_pull(std::move(o));
  p.add_waiter(std::move(found));
}

bool Cluster::pull_pending(const media::StreamKey& key) const {
  auto it = edge_pulls_.find(key.str());
  return it != edge_pulls_.end() && !it->second->finished() && !it->second->up();
}

void Cluster::touch(const media::StreamKey& key) {
  if (auto it = edge_pulls_.find(key.str()); it != edge_pulls_.end()) it->second->touch();
}

media::StreamOutputs Cluster::outputs(media::Stream& stream, const config::AppConfig& app, media::PublishOrigin origin) {
  media::StreamOutputs out = media::default_outputs(stream, app, origin);
  if (origin == media::PublishOrigin::WorkerLink) return out;  // the owning worker pushes
  auto push = [&](std::string id, std::vector<config::RtmpUrl> targets, int64_t reconnect_ms, int64_t timeout_ms) {
    PushOptions o;
    o.id = std::move(id);
    o.targets = std::move(targets);
    o.reconnect_ms = reconnect_ms;
    o.connect_timeout_ms = timeout_ms;
    out.push_back(std::make_unique<PushOutput>(ctx_, stream, std::move(o), pushes_));
  };
  for (const config::PushTarget& t : app.push) push(next_id(), {t.url}, t.reconnect.count(), 5000);
  if (app.edge && app.edge->publish == config::EdgePublish::Forward && origin == media::PublishOrigin::Ingest) {
    // A publish at the edge goes on to the origins, in order.
    push(next_id(), app.edge->origins, 1000, app.edge->connect_timeout.count());
  }
  for (const auto& [id, req] : runtime_pushes_) {
    if (req.app != stream.app() || req.name != stream.name()) continue;
    if (auto url = config::parse_rtmp_url(req.url)) push(id, {*url}, 2000, 5000);
  }
  return out;
}

std::vector<RelayInfo> Cluster::relays() const {
  std::vector<RelayInfo> out;
  for (const auto* m : {&edge_pulls_, &static_pulls_}) {
    for (const auto& [k, p] : *m) {
      if (!p->finished()) out.push_back(p->info());
    }
  }
  for (const PushOutput* p : *pushes_) {
    if (RelayInfo r = p->info(); r.state != RelayState::Closed) out.push_back(std::move(r));
  }
  return out;
}

RelayCreated Cluster::create(const RelayRequest& req) {
  RelayCreated r;
  const config::AppConfig* app = ctx_.config->find_app(req.app);
  if (!app) return r.error = "unknown app '" + req.app + "'", r;
  if (auto why = core::name_error(req.name)) return r.error = "invalid name '" + req.name + "': " + *why, r;
  std::string error;
  auto url = config::parse_rtmp_url(req.url, &error);
  if (!url) return r.error = error, r;
  if (req.kind == RelayKind::Pull) {
    if (url->name.empty()) url->name = req.name;
    PullOptions o;
    o.id = req.id.empty() ? next_id() : req.id;
    o.key = media::StreamKey{req.app, req.name};
    o.app = app;
    o.on_demand = false;
    o.sources = {*url};
    r.id = o.id;
    start_pull(std::move(o));
    return r;
  }
  if (req.kind != RelayKind::Push) return r.error = "kind must be push or pull", r;
  r.id = req.id.empty() ? next_id() : req.id;
  runtime_pushes_[*r.id] = req;
  // A stream publishing here now gets it at once; later publishes get it from outputs().
  if (media::Stream* s = ctx_.streams->find(media::StreamKey{req.app, req.name}); s && s->has_publisher()) {
    PushOptions o;
    o.id = *r.id;
    o.targets = {*url};
    s->add_output(std::make_unique<PushOutput>(ctx_, *s, std::move(o), pushes_));
  }
  return r;
}

std::string Cluster::add_relay(const std::string& id, const std::string& kind, const std::string& app,
                               const std::string& name, const std::string& url) {
  if (kind != "push" && kind != "pull") return "kind must be push or pull";
  if (static_pulls_.count(id) || runtime_pushes_.count(id)) return "relay " + id + " exists";
  RelayCreated c = create(RelayRequest{kind == "push" ? RelayKind::Push : RelayKind::Pull, app, name, url, id});
  return c.id ? std::string() : c.error;
}

bool Cluster::remove(const std::string& id) {
  if (auto it = static_pulls_.find(id); it != static_pulls_.end()) {
    if (it->second->finished()) return false;  // removed already, not reaped yet
    it->second->stop("removed");
    return true;
  }
  if (runtime_pushes_.erase(id) == 0) return false;
  for (PushOutput* p : *pushes_) {
    if (p->id() == id) p->cancel();
  }
  return true;
}

}  // namespace rill::cluster
