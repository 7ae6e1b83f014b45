#include "rill/server/http_admission.h"

#include <memory>
#include <optional>

#include "rill/http/http_server.h"

namespace rill::server {

namespace {

// A request whose decision is pending. Owned by the gate's callback until it runs, or freed by
// the exchange's abandoned callback (which cancels the decision) when the client leaves first.
struct PendingAdmission {
  net::WorkerCore& ctx;
  HttpServer& http;
  HttpExchange* ex;  // while admit_play() runs (a decision at once); then `held`
  // The request: the caller's while admit_play() runs; `kept`, a copy, once the exchange is held
  // (most decisions come at once, and then nothing is copied).
  const HttpRequestInfo* info;
  HttpAdmitted admitted;
  std::optional<HttpRequestInfo> kept;
  HttpHeld held;
  StreamGate::Ticket ticket = 0;
  bool decided = false;
  bool is_held = false;  // the decision did not come at once: the exchange is held
};

int status_for(Verdict v) { return v == Verdict::NotFound ? 404 : 403; }

// Admitted: the continuation; else the error answer.
void answer(HttpServer& http, HttpExchange& ex, const HttpRequestInfo& info, HttpAdmitted& admitted,
            GateDecision&& d) {
  if (d.verdict == Verdict::Admitted) {
    admitted(ex, info, std::move(d));
  } else {
    http.reply_error(ex, info, status_for(d.verdict), d.reason);
  }
}

void decide(PendingAdmission* p, GateDecision d) {
  p->decided = true;
  HttpExchange* ex = p->is_held ? p->held.get() : p->ex;
  if (ex) {                                     // null: the client left (nothing to answer)
    if (p->is_held) ex->on_abandoned(nullptr);  // the continuation may hold it again with its own
    answer(p->http, *ex, *p->info, p->admitted, std::move(d));
  }
  if (p->is_held) delete p;  // else the caller still looks at it
}

}  // namespace

void admit_http_play(net::WorkerCore& ctx, HttpServer& http, HttpExchange& ex, const HttpRequestInfo& info,
                     GateProto proto, const media::StreamKey& key, HttpAdmitted admitted) {
  AdmissionRequest r;
  r.proto = proto;
  r.key = key;
  r.query = info.query;
  r.peer = info.peer;
  r.session_id = info.id;
  r.probe = info.method == HttpMethod::Head;
  // Most requests meet no check: decided here, with no pending admission nor gate callback.
  if (auto d = ctx.gate->decide_play_now(r)) return answer(http, ex, info, admitted, std::move(*d));
  auto p = std::make_unique<PendingAdmission>(
      PendingAdmission{ctx, http, &ex, &info, std::move(admitted), {}, {}});
  PendingAdmission* raw = p.get();
  raw->ticket = ctx.gate->admit_play(std::move(r), [raw](GateDecision d) { decide(raw, std::move(d)); });
  if (raw->decided) return;  // answered at once: p frees it
  // Later: the gate's callback or the client's departure, whichever comes first, frees it.
  raw->ex = nullptr;
  raw->kept = info;
  raw->info = &*raw->kept;
  raw->held = ex.hold();
  raw->is_held = true;
  ex.on_abandoned([raw = p.release()] {
    raw->ctx.gate->cancel(raw->ticket);
    raw->ctx.log->debug("http: {} went away while its admission was decided", raw->info->peer);
    delete raw;
  });
}

}  // namespace rill::server
