#pragma once
// A small HTTP/1.1 client for admission callbacks: POSTs a form to a URL through libevent's
// evhttp on the worker's loop (never blocking it), with a hard deadline of its own, a cap on the
// answer (64 KiB: a larger body is a failure), no redirect following and no retries. Each call
// has its own connection (Connection: close), so one slow backend delays only its own callers.
// The URL's host is resolved for every call by the worker's net::Resolver; its addresses are
// tried in order until one takes the connection, each with an equal share of the time left.
// https:// URLs go over TLS (OpenSSL through libevent): SNI with the URL's host name, the
// certificate verified for that host against a CA file or the system's trust store; a refused
// certificate fails the call ("cannot connect to HOST:PORT: 127.0.0.1: tls: certificate verify
// failed: hostname mismatch").
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "rill/net/resolver.h"
#include "rill/net/tls_connection.h"

struct event_base;
struct evhttp_request;

namespace rill::http {

class HttpCallbackClient {
 public:
  // status 0: no HTTP answer (failure says why: "timed out after 3000 ms", "connection failed or
  // answer larger than 64 KiB", "cannot connect to HOST:PORT: 127.0.0.2: connection failed; ...", "cannot
  // resolve HOST: no such host", "bad URL").
  using Done = std::function<void(int status, std::string location, std::string failure)>;
  using CallId = uint64_t;
  static constexpr size_t kMaxAnswerBody = 64 * 1024;

  // `resolver` null: numeric hosts only. It outlives the client.
  HttpCallbackClient(event_base* base, net::Resolver* resolver);
  ~HttpCallbackClient();  // pending calls end without their callbacks
  HttpCallbackClient(const HttpCallbackClient&) = delete;
  HttpCallbackClient& operator=(const HttpCallbackClient&) = delete;

  // `done` runs exactly once, always from the event loop (never inside post()), unless the call
  // is cancelled or the client destroyed first. tls_ca_file (https://): the PEM file the server
  // is verified against; empty: the system's trust store.
  CallId post(const std::string& url, const std::string& form, std::chrono::milliseconds timeout, Done done,
              const std::string& tls_ca_file = {});
  void cancel(CallId id);
  size_t pending() const { return calls_.size(); }

  struct Call;  // internal

 private:
  void finish(CallId id, int status, std::string location, std::string failure,
              bool inside_connection_callback);
  void resolved(CallId id, net::Resolution r);
  std::string attempt(Call& c);
  void next_address(Call& c, const std::string& why, bool inside_connection_callback);
  static void on_response(evhttp_request* req, void* arg);
  static void on_timeout(int, short, void* arg);
  static void on_attempt_timeout(int, short, void* arg);
  // The client context of a CA file ("": the system's trust store), loaded once. Throws TlsError.
  std::shared_ptr<net::TlsContext> tls_context(const std::string& ca_file);

  event_base* base_;
  net::Resolver* resolver_;
  std::map<CallId, std::unique_ptr<Call>> calls_;
  std::map<std::string, std::shared_ptr<net::TlsContext>> tls_;  // by CA file
  CallId next_id_ = 1;
};

}  // namespace rill::http
