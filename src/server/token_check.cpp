// apps.NAME.auth with publish/play: token — the signed token of protocol/stream_token.h in the
// request's query. HLS segment requests carry the playlist's token (see hls_handler.cpp).
#include <ctime>
#include <optional>
#include <string>

#include "rill/media/rendition_group.h"
#include "rill/protocol/stream_token.h"
#include "rill/server/admission_checks.h"

namespace rill::server {

namespace {

bool wants_token(config::AuthMode m) {
  return m == config::AuthMode::Token || m == config::AuthMode::TokenAndCallback;
}

class TokenCheck final : public AdmissionCheck {
 public:
  const char* name() const override { return "token"; }

  bool applies(const AdmissionRequest& req, GateAction action) const override {
    const config::AppConfig* app = req.app;
    return app && wants_token(action == GateAction::Publish ? app->auth.publish : app->auth.play);
  }

  void check(const AdmissionRequest& req, GateAction action, Done done) override {
    const config::AppConfig* app = req.app;
    if (!app) return done(std::nullopt);
    const config::AuthMode mode = action == GateAction::Publish ? app->auth.publish : app->auth.play;
    if (!wants_token(mode)) return done(std::nullopt);
    // The configuration guarantees a secret for a token mode.
    const auto now = static_cast<int64_t>(std::time(nullptr));
    const std::string& secret = app->auth.secret.value_or("");
    auto refused =
        protocol::verify_token(secret, to_string(action), req.key.app, req.key.name, req.query, now);
    // A play token for a rendition group NAME admits its renditions (NAME_hi, ..., and the
    // tracks' NAME_track0, ...: docs/abr.md), whose URIs in NAME's multivariant playlist carry it.
    if (refused && action == GateAction::Play) {
      std::optional<std::string> group;
      if (auto member = media::rendition_member(req.key.name, app->hls.variant_suffixes)) {
        group = std::move(member->group);
      } else if (auto track = media::track_rendition_of(req.key.name)) {
        group = std::move(track->stream);
      }
      if (group && !protocol::verify_token(secret, to_string(action), req.key.app, *group, req.query, now))
        refused.reset();
    }
    done(std::move(refused));
  }
};

}  // namespace

std::unique_ptr<AdmissionCheck> make_token_check(net::WorkerCore&) {
  return std::make_unique<TokenCheck>();
}

}  // namespace rill::server
