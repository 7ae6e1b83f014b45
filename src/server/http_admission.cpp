#include "rill/server/http_admission.h"

#include <memory>
#include <optional>

#include "rill/http/http_server.h"

namespace rill::server {

namespace {

// A request whose decision is pending: the caller's while admit_play() runs (most decisions come
// at once), then its held exchange's (HttpHeldState) until decided or abandoned.
struct PendingAdmission final : HttpHeldState {
  PendingAdmission(net::WorkerCore& c, StreamGate& g, HttpExchange& e, HttpAdmitted a)
      : ctx(c), gate(g), now(&e), admitted(std::move(a)) {}
  void abandoned(const HttpExchange& ex) override {
    gate.cancel(ticket);
    ctx.log->debug("http: {} went away while its admission was decided", ex.info().peer);
  }

  net::WorkerCore& ctx;
  StreamGate& gate;
  HttpExchange* now;  // while admit_play() runs (a decision at once); then `held`
  HttpAdmitted admitted;
  HttpHeld held;
  StreamGate::Ticket ticket = 0;
  bool decided = false;
};

int status_for(Verdict v) { return v == Verdict::NotFound ? 404 : 403; }

// Admitted: the continuation; else the error answer.
void answer(HttpExchange& ex, HttpAdmitted& admitted, GateDecision&& d) {
  if (d.verdict == Verdict::Admitted) {
    admitted(ex, std::move(d));
  } else {
    ex.reply_error(status_for(d.verdict), d.reason);
  }
}

void decide(PendingAdmission& p, GateDecision d) {
  p.decided = true;
  // Null: the client left (its abandonment cancelled the decision: not expected). A held
  // exchange's answer, or a continuation that holds it again, gives this state up: it is
  // destroyed on the next loop turn, not under this call.
  if (HttpExchange* ex = p.now ? p.now : p.held.get()) answer(*ex, p.admitted, std::move(d));
}

}  // namespace

void admit_http_play(net::WorkerCore& ctx, StreamGate& gate, HttpExchange& ex, GateProto proto,
                     const media::StreamKey& key, HttpAdmitted admitted) {
  const HttpRequestInfo& info = ex.info();
  AdmissionRequest r;
  r.proto = proto;
  r.key = key;
  r.query = info.query;
  r.peer = info.peer;
  r.session_id = info.id;
  r.probe = info.method == HttpMethod::Head;
  // Most requests meet no check: decided here, with no pending admission nor gate callback.
  if (auto d = gate.decide_play_now(r)) return answer(ex, admitted, std::move(*d));
  auto p = std::make_unique<PendingAdmission>(ctx, gate, ex, std::move(admitted));
  PendingAdmission& pending = *p;
  pending.ticket =
      gate.admit_play(std::move(r), [&pending](GateDecision d) { decide(pending, std::move(d)); });
  if (pending.decided) return;  // answered at once: `p` frees it
  // Later: the exchange owns it; the gate's callback answers, or the client's departure cancels.
  pending.now = nullptr;
  pending.held = ex.hold(std::move(p));
}

}  // namespace rill::server
