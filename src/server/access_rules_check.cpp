// apps.NAME.access: nginx-rtmp's allow/deny by client address (core/access_rule.h).
#include "rill/core/access_rule.h"
#include "rill/server/admission_checks.h"

namespace rill::server {

namespace {

class AccessRulesCheck final : public AdmissionCheck {
 public:
  const char* name() const override { return "access rules"; }

  bool applies(const AdmissionRequest& req, GateAction) const override {
    return req.app && !req.app->access.empty();  // placement answers an unknown app
  }

  void check(const AdmissionRequest& req, GateAction action, Done done) override {
    const config::AppConfig* app = req.app;
    if (!app || app->access.empty()) return done(std::nullopt);
    const auto a = action == GateAction::Publish ? core::AccessAction::Publish : core::AccessAction::Play;
    const core::AccessRule* rule = nullptr;
    if (core::access_allowed(app->access, a, req.peer, &rule)) return done(std::nullopt);
    done("address denied by rule '" + rule->text + "' of apps." + app->name + ".access");
  }
};

}  // namespace

std::unique_ptr<AdmissionCheck> make_access_rules_check(net::WorkerCore&) {
  return std::make_unique<AccessRulesCheck>();
}

}  // namespace rill::server
