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
#include "rill/net/server_context.h"

namespace rill::server {

enum class GateProto { Rtmp, HttpFlv, Hls, EdgePull };
const char* to_string(GateProto p);

enum class GateAction { Publish, Play };
const char* to_string(GateAction a);

struct AdmissionRequest {
  GateProto proto = GateProto::Rtmp;
  media::StreamKey key;
  std::string query;      // raw, without the '?': tokens travel here
  std::string peer;       // "addr:port" of the client
  uint64_t session_id = 0;
  // A play probe (HTTP HEAD): checks run, but placement only looks — nothing is created.
  bool probe = false;
  // RTMP connect fields (empty for HTTP).
  std::string tc_url;
  std::string page_url;
  std::string flash_ver;
};

// A rule the gate applies before placing a request. check() must call `done` exactly once, now or
// later from the event loop: nullopt admits, a string refuses with that reason (for the log and
// the client). The gate may have forgotten the request by then (cancelled): calling done is
// still safe.
class AdmissionCheck {
 public:
  using Done = std::function<void(std::optional<std::string> refusal)>;
  virtual ~AdmissionCheck() = default;
  virtual const char* name() const = 0;
  virtual void check(const AdmissionRequest& req, GateAction action, Done done) = 0;
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
  std::string reason;  // not admitted: why
};

class StreamGate {
 public:
  using Ticket = uint64_t;
  using Callback = std::function<void(GateDecision)>;

  explicit StreamGate(net::ServerContext& ctx);
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
  void run_checks(Ticket t);
  void on_check_done(Ticket t, std::optional<std::string> refusal);
  void refuse(Ticket t, const char* check, const std::string& why);
  void finish(Ticket t, GateDecision d);
  void place_or_pull(Ticket t);
  bool needs_pull(const Pending& p, const config::AppConfig* app) const;
  GateDecision place(const Pending& p);
  GateDecision place_publish(const Pending& p, const config::AppConfig& app);
  GateDecision place_play(const Pending& p, const config::AppConfig& app);

  net::ServerContext& ctx_;
  std::vector<std::unique_ptr<AdmissionCheck>> checks_;
  std::map<Ticket, Pending> pending_;
  Ticket next_ticket_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // seen by checks' late done()
  // Set while a check runs synchronously inside run_checks: its done() continues the loop there
  // instead of recursing.
  Ticket running_ = 0;
  bool answered_inline_ = false;
  std::optional<std::string> inline_refusal_;
};

}  // namespace rill::server
