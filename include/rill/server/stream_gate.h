#pragma once
// StreamGate: the one admission point of a worker. Every publish and every play — RTMP,
// HTTP-FLV, HLS playlist and segment requests, and (with the cluster) edge pulls — asks it, with
// the stream key, the query string, the peer and the protocol. The gate runs its checks in order
// (access rules, signed tokens, HTTP callbacks: each an AdmissionCheck that may answer later),
// then places the request: a publish is claimed across workers (StreamLocator), a play is given
// the local stream, one fed by a worker link, or "not found". The answer always comes through a
// callback — now, or later from the event loop — so no session decides admission itself.
//
// A session that goes away while its decision is pending calls cancel(ticket); the callback is
// then never called.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rill/config/config.h"
#include "rill/media/stream.h"
#include "rill/media/stream_key.h"
#include "rill/net/worker_core.h"

namespace rill::workers {
class StreamLocator;
}
namespace rill::cluster {
class Cluster;
}

namespace rill::server {

enum class GateProto { Rtmp, HttpFlv, Hls, EdgePull };
const char* to_string(GateProto p);

enum class GateAction { Publish, Play };
const char* to_string(GateAction a);

struct GateDecision;

struct AdmissionRequest {
  GateProto proto = GateProto::Rtmp;
  media::StreamKey key;
  // The key's app, resolved once: by the caller when it has it, else by the gate on entry; null
  // for an app the configuration does not have. Checks and placement read it (no find_app each).
  const config::AppConfig* app = nullptr;
  std::string query;  // raw, without the '?': tokens travel here
  std::string peer;   // "addr:port" of the client
  uint64_t session_id = 0;
  // A play probe (HTTP HEAD): checks run, but placement only looks — nothing is created.
  bool probe = false;
  // RTMP connect fields (empty for HTTP).
  std::string tc_url;
  std::string page_url;
  std::string flash_ver;
};

// What a check answers: admit (nullopt), refuse (a reason, for the log and the client), or admit
// under another stream name (an HTTP callback's 3xx Location: nginx-rtmp's rename). Converts from
// the plain forms, so `done(std::nullopt)` and `done("why")` read as before.
struct CheckAnswer {
  std::optional<std::string> refusal;
  std::optional<std::string> rename;  // admitted as APP/rename (a name of the one name rule)

  CheckAnswer() = default;
  CheckAnswer(std::nullopt_t) {}
  CheckAnswer(std::optional<std::string> r) : refusal(std::move(r)) {}
  CheckAnswer(std::string r) : refusal(std::move(r)) {}
  CheckAnswer(const char* r) : refusal(std::string(r)) {}
  static CheckAnswer renamed(std::string name) {
    CheckAnswer a;
    a.rename = std::move(name);
    return a;
  }
};

// A rule the gate applies before placing a request. check() must call `done` exactly once, now or
// later from the event loop. The gate may have forgotten the request by then (cancelled): calling
// done is still safe. A rename applies to the checks after it and to placement.
class AdmissionCheck {
 public:
  using Done = std::function<void(CheckAnswer answer)>;
  virtual ~AdmissionCheck() = default;
  virtual const char* name() const = 0;
  // Whether the check has anything to ask of this request (e.g. the app configures it). A check
  // that does not apply is passed over without a call to check(): most requests meet no check,
  // and the gate's per-request work then stays a lookup (an HLS player polls every few seconds).
  virtual bool applies(const AdmissionRequest& req, GateAction action) const = 0;
  // Called only when applies(); answers through `done`, at once or later.
  virtual void check(const AdmissionRequest& req, GateAction action, Done done) = 0;
  // Told of every decision the gate hands out (`req` with the final key), e.g. to follow the
  // sessions it admitted. Default: nothing.
  virtual void decided(const AdmissionRequest& req, GateAction action, const GateDecision& d) {
    (void)req, (void)action, (void)d;
  }
  // The admitted publisher of `key` left (StreamGate::publish_ended). Default: nothing.
  virtual void publish_ended(const media::StreamKey& key) { (void)key; }
};

enum class Verdict {
  Admitted,
  Refused,   // a check said no (auth), or the name cannot be used
  Busy,      // publish: another publisher holds the name (on any worker)
  NotFound,  // play: nothing is published and the app does not wait (play_wait: 0)
};
const char* to_string(Verdict v);

struct GateDecision {
  Verdict verdict = Verdict::Refused;
  // Admitted RTMP/FLV play: the stream to subscribe to (it may still wait for its publisher).
  // Admitted publish: the stream, with the publisher attached. Null for HLS (served from the
  // HLS store, local or the owner's).
  media::Stream* stream = nullptr;
  std::string reason;         // not admitted: why
  bool unauthorized = false;  // Refused by a check (auth), not by placement
  // The key the request was decided for: the asked one, or the one a check renamed it to.
  media::StreamKey key;
  const config::AppConfig* app = nullptr;  // the key's app, as the gate resolved it (null: unknown)
};

class StreamGate {
 public:
  using Ticket = uint64_t;
  using Callback = std::function<void(GateDecision)>;

  // `locator` places publishers and players across workers; `cluster` pulls an edge's streams
  // from its origins (null: no cluster, e.g. unit tests). Both outlive the gate.
  StreamGate(net::WorkerCore& ctx, workers::StreamLocator& locator, cluster::Cluster* cluster);
  ~StreamGate();
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  // Checks run in the order added.
  void add_check(std::unique_ptr<AdmissionCheck> check);
  size_t check_count() const { return checks_.size(); }

  // `publisher` is the opaque owner tag attached to the stream when admitted. The callback may run
  // before this returns. Returns a ticket for cancel().
  Ticket admit_publish(AdmissionRequest req, const void* publisher, Callback done);
  Ticket admit_play(AdmissionRequest req, Callback done);
  // A play decided now, when no check applies and nothing waits for an upstream pull (most HLS
  // requests): the decision admit_play would hand its callback at once, with nothing kept and no
  // ticket. nullopt: ask admit_play. Resolves req.app on the way.
  std::optional<GateDecision> decide_play_now(AdmissionRequest& req);
  // The admitted publisher of `key` left (it has detached from the stream): the name is free again
  // on every worker.
  void publish_ended(const media::StreamKey& key);
  // Forgets a pending request: its callback is never called. Unknown or finished tickets are ignored.
  void cancel(Ticket t);
  size_t pending() const { return pending_.size(); }

 private:
  struct Pending {
    AdmissionRequest req;
    GateAction action;
    const void* publisher = nullptr;
    Callback done;
    size_t next_check = 0;
  };
  Ticket start(Pending p);
  // No check applies and nothing needs an upstream pull: decided at once, with no pending entry
  // (most HLS requests: a map node and two lookups fewer per request). nullopt otherwise.
  std::optional<GateDecision> decide_now(AdmissionRequest& req, GateAction action, const void* publisher);
  void run_checks(Ticket t);
  void on_check_done(Ticket t, CheckAnswer answer);
  // Applies a check's answer; false when the request was refused (and answered).
  bool apply(Ticket t, const char* check, CheckAnswer answer);
  void refuse(Ticket t, const char* check, const std::string& why);
  void finish(Ticket t, GateDecision d);
  void place_or_pull(Ticket t);
  bool needs_pull(const AdmissionRequest& req, GateAction action) const;
  GateDecision place(const AdmissionRequest& req, GateAction action, const void* publisher);
  GateDecision place_publish(const AdmissionRequest& req, const void* publisher,
                             const config::AppConfig& app);
  GateDecision place_play(const AdmissionRequest& req, const config::AppConfig& app);

  net::WorkerCore& ctx_;
  workers::StreamLocator& locator_;
  cluster::Cluster* cluster_;
  std::vector<std::unique_ptr<AdmissionCheck>> checks_;
  std::map<Ticket, Pending> pending_;
  Ticket next_ticket_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // seen by checks' late done()
  // Set while a check runs synchronously inside run_checks: its done() continues the loop there
  // instead of recursing.
  Ticket running_ = 0;
  bool answered_inline_ = false;
  CheckAnswer inline_answer_;
};

}  // namespace rill::server
