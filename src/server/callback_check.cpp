// apps.NAME.callbacks: nginx-rtmp's notify module (protocol/notify_callback.h) on the admission
// gate. on_publish / on_play decide (fail closed: no answer in time refuses); the sessions they
// admit are followed to send publish_done / play_done when they end and update every
// update_interval while they live (an update answered with anything but 2xx ends the session).
#include <map>
#include <memory>

#include "rill/core/address_counter.h"
#include "rill/http/http_callback_client.h"
#include "rill/protocol/notify_callback.h"
#include "rill/server/admission_checks.h"

namespace rill::server {

namespace {

protocol::NotifyFields fields_of(const AdmissionRequest& req, const char* call) {
  protocol::NotifyFields f;
  f.call = call;
  f.addr = core::address_part(req.peer);  // nginx-rtmp sends the address alone
  f.clientid = std::to_string(req.session_id);
  f.app = req.key.app;
  f.flashver = req.flash_ver;
  f.tcurl = req.tc_url;
  f.pageurl = req.page_url;
  f.name = req.key.name;
  f.query = req.query;
  return f;
}

// An admitted session followed for its done/update callbacks.
struct Followed {
  GateAction action;
  AdmissionRequest req;
  TimerId update_timer = 0;
};

class CallbackCheck final : public AdmissionCheck {
 public:
  explicit CallbackCheck(net::WorkerCore& ctx) : ctx_(ctx), client_(ctx.base, ctx.resolver) {
    ctx_.sessions->add_retire_observer([this, alive = std::weak_ptr<bool>(alive_)](net::Session& s) {
      if (auto a = alive.lock(); a && *a) session_ended(s.id());
    });
  }
  ~CallbackCheck() override {
    *alive_ = false;
    for (auto& [id, f] : followed_) ctx_.timers->cancel(f.update_timer);
  }
  const char* name() const override { return "callback"; }

  bool applies(const AdmissionRequest& req, GateAction action) const override {
    const config::AppConfig* app = req.app;
    if (!app) return false;  // placement answers an unknown app
    return (action == GateAction::Publish ? app->callbacks.on_publish : app->callbacks.on_play).has_value();
  }

  void check(const AdmissionRequest& req, GateAction action, Done done) override {
    const config::AppConfig* app = req.app;
    if (!app) return done(std::nullopt);
    const auto& url = action == GateAction::Publish ? app->callbacks.on_publish : app->callbacks.on_play;
    if (!url) return done(std::nullopt);
    const std::string body = protocol::notify_form_body(fields_of(req, to_string(action)));
    client_.post(
        *url, body, app->callbacks.timeout,
        [done = std::move(done)](int status, std::string location, std::string failure) {
          protocol::NotifyAnswer a = protocol::interpret_notify_answer(status, location, failure);
          if (!a.allowed) return done(std::move(a.refusal));
          done(a.rename ? CheckAnswer::renamed(std::move(*a.rename)) : CheckAnswer{});
        },
        app->callbacks.tls_ca_file.value_or(std::string()));
  }

  void decided(const AdmissionRequest& req, GateAction action, const GateDecision& d) override {
    if (d.verdict != Verdict::Admitted || req.probe || req.proto == GateProto::Hls) return;
    const config::AppConfig* app = req.app;
    if (!app) return;
    const config::CallbacksConfig& cb = app->callbacks;
    const bool done_cb =
        action == GateAction::Publish ? cb.on_publish_done.has_value() : cb.on_play_done.has_value();
    if (!done_cb && !cb.on_update) return;
    Followed& f = followed_[req.session_id];
    ctx_.timers->cancel(f.update_timer);  // a connection that publishes again: one timer
    f.action = action;
    f.req = req;
    if (cb.on_update) schedule_update(req.session_id, cb.update_interval);
  }

 private:
  void schedule_update(uint64_t id, config::Duration interval) {
    followed_[id].update_timer = ctx_.timers->schedule(interval, [this, id] { send_update(id); });
  }

  void send_update(uint64_t id) {
    auto it = followed_.find(id);
    if (it == followed_.end()) return;
    const config::AppConfig* app = it->second.req.app;
    if (!app || !app->callbacks.on_update) return;
    it->second.update_timer = 0;
    const std::string body = protocol::notify_form_body(fields_of(it->second.req, "update"));
    client_.post(
        *app->callbacks.on_update, body, app->callbacks.timeout,
        [this, id, interval = app->callbacks.update_interval](int status, std::string, std::string failure) {
          if (!followed_.count(id)) return;  // ended meanwhile
          if (status >= 200 && status < 300) return schedule_update(id, interval);
          end_session(id, status == 0 ? failure : "answered " + std::to_string(status));
        },
        app->callbacks.tls_ca_file.value_or(std::string()));
  }

  void end_session(uint64_t id, const std::string& why) {
    net::Session* s = ctx_.sessions->find(id);
    if (!s) return;
    ctx_.log->warn("callback: update for session {} refused ({}): closing it", id, why);
    s->close("update callback refused");
  }

  void session_ended(uint64_t id) {
    auto it = followed_.find(id);
    if (it == followed_.end()) return;
    Followed f = std::move(it->second);
    followed_.erase(it);
    ctx_.timers->cancel(f.update_timer);
    const config::AppConfig* app = f.req.app;
    if (!app) return;
    const bool publish = f.action == GateAction::Publish;
    const auto& url = publish ? app->callbacks.on_publish_done : app->callbacks.on_play_done;
    if (!url) return;
    // Informational: the answer is ignored.
    client_.post(
        *url, protocol::notify_form_body(fields_of(f.req, publish ? "publish_done" : "play_done")),
        app->callbacks.timeout, [](int, std::string, std::string) {},
        app->callbacks.tls_ca_file.value_or(std::string()));
  }

  net::WorkerCore& ctx_;
  http::HttpCallbackClient client_;
  std::map<uint64_t, Followed> followed_;  // by session id
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace

std::unique_ptr<AdmissionCheck> make_callback_check(net::WorkerCore& ctx) {
  return std::make_unique<CallbackCheck>(ctx);
}

}  // namespace rill::server
