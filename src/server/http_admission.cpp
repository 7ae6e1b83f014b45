#include "rill/server/http_admission.h"

#include <event2/http.h>

#include <memory>

#include "rill/server/http_server.h"

namespace rill::server {

namespace {

// A request whose decision is pending. Owned by the gate's callback until it runs, or freed by
// the connection's close callback (which cancels the decision) when the client leaves first.
struct PendingAdmission {
  net::ServerContext& ctx;
  HttpServer& http;
  evhttp_request* req;
  HttpRequestInfo info;
  HttpAdmitted admitted;
  StreamGate::Ticket ticket = 0;
  bool decided = false;
  bool held = false;  // the close callback is armed (the decision did not come at once)
};

int status_for(Verdict v) { return v == Verdict::NotFound ? 404 : 403; }

void on_client_close(evhttp_connection*, void* arg) {
  auto* p = static_cast<PendingAdmission*>(arg);
  p->ctx.gate->cancel(p->ticket);
  p->ctx.log->debug("http: {} went away while its admission was decided", p->info.peer);
  // Detached from its connection, the request is ours to free (see hls_remote.cpp).
  if (evhttp_request_get_connection(p->req) == nullptr) evhttp_request_free(p->req);
  delete p;
}

void decide(PendingAdmission* p, GateDecision d) {
  p->decided = true;
  if (p->held) p->http.set_close_callback(evhttp_request_get_connection(p->req), nullptr, nullptr);
  if (d.verdict == Verdict::Admitted) {
    p->admitted(p->req, p->info, std::move(d));
  } else {
    p->http.reply_error(p->req, p->info, status_for(d.verdict), d.reason);
  }
  if (p->held) delete p;  // else the caller still looks at it
}

}  // namespace

void admit_http_play(net::ServerContext& ctx, HttpServer& http, evhttp_request* req, const HttpRequestInfo& info,
                     GateProto proto, const media::StreamKey& key, HttpAdmitted admitted) {
  AdmissionRequest r;
  r.proto = proto;
  r.key = key;
  r.query = info.query;
  r.peer = info.peer;
  r.session_id = info.id;
  r.probe = info.method == HttpMethod::Head;
  auto p = std::make_unique<PendingAdmission>(PendingAdmission{ctx, http, req, info, std::move(admitted)});
  PendingAdmission* raw = p.get();
  raw->ticket = ctx.gate->admit_play(std::move(r), [raw](GateDecision d) { decide(raw, std::move(d)); });
  if (raw->decided) return;  // answered at once: p frees it
  // Later: the gate's callback or the client's departure, whichever comes first, frees it.
  raw->held = true;
  http.set_close_callback(evhttp_request_get_connection(req), &on_client_close, p.release());
}

}  // namespace rill::server
