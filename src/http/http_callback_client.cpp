#include "rill/http/http_callback_client.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace rill::http {

struct HttpCallbackClient::Call {
  HttpCallbackClient* client = nullptr;
  CallId id = 0;
  Done done;
  evhttp_connection* conn = nullptr;
  event* timer = nullptr;          // the call's deadline
  event* attempt_timer = nullptr;  // this address's share of it, while more addresses remain
  std::chrono::milliseconds timeout{0};
  std::chrono::steady_clock::time_point deadline;
  std::optional<net::Resolver::LookupId> lookup;
  std::string host;  // as in the URL, for the Host header and errors
  uint16_t port = 80;
  std::shared_ptr<net::TlsContext> tls;  // https://
  std::string tls_error;                 // why the certificate was refused (the verify callback)
  bool tls_handshaken = false;           // the TLS handshake of this attempt completed
  std::string target;  // path and query
  std::string form;
  std::vector<net::ResolvedAddress> addresses;
  size_t next = 0;              // the next address to try
  std::string failed;           // "127.0.0.2: connection failed; ...": the addresses given up
  bool request_failed = false;  // evhttp reported an error of a sent request (it reached a server)
  // Why the TLS connection failed: the refused certificate, else OpenSSL's reason.
  std::string tls_failure() const {
    if (!tls_error.empty()) return tls_error;
    bufferevent* bev = conn ? evhttp_connection_get_bufferevent(conn) : nullptr;
    if (const unsigned long e = bev ? bufferevent_get_openssl_error(bev) : 0) {
      const char* reason = ERR_reason_error_string(e);
      return std::string("tls: ") + (reason ? reason : "error " + std::to_string(e));
    }
    return "connection failed before the TLS handshake completed";
  }
  // Frees the connection. Inside one of the connection's own callbacks the connection goes on
  // the next loop iteration (libevent still uses it); anywhere else at once, so that no callback
  // can reach this call afterwards.
  void release_connection(event_base* base, bool inside_connection_callback) {
    if (attempt_timer) event_free(std::exchange(attempt_timer, nullptr));
    evhttp_connection* c = std::exchange(conn, nullptr);
    if (!c) return;
    // The TLS session outlives this call when freed later: it must not reach it any more.
    if (SSL* ssl = tls ? bufferevent_openssl_get_ssl(evhttp_connection_get_bufferevent(c)) : nullptr) {
      SSL_set_app_data(ssl, nullptr);
    }
    if (!inside_connection_callback) return evhttp_connection_free(c);
    const timeval now{0, 0};
    event_base_once(
        base, -1, EV_TIMEOUT,
        [](int, short, void* p) { evhttp_connection_free(static_cast<evhttp_connection*>(p)); }, c, &now);
  }
  // Frees the timers, the lookup and the connection.
  void release(event_base* base, net::Resolver* resolver, bool inside_connection_callback) {
    if (timer) event_free(std::exchange(timer, nullptr));
    if (lookup && resolver) resolver->cancel(*lookup);
    lookup.reset();
    release_connection(base, inside_connection_callback);
  }
};

namespace {

struct ParsedUrl {
  std::string host;
  uint16_t port = 80;
  bool tls = false;    // https://
  std::string target;  // path and query
};

bool parse_url(const std::string& url, ParsedUrl& out) {
  evhttp_uri* uri = evhttp_uri_parse(url.c_str());
  if (!uri) return false;
  const char* host = evhttp_uri_get_host(uri);
  const char* path = evhttp_uri_get_path(uri);
  const char* query = evhttp_uri_get_query(uri);
  const char* scheme = evhttp_uri_get_scheme(uri);
  out.tls = scheme && std::string_view(scheme) == "https";
  const bool ok = host && *host && scheme && (out.tls || std::string_view(scheme) == "http");
  if (ok) {
    out.host = host;
    const uint16_t default_port = out.tls ? 443 : 80;
    out.port = static_cast<uint16_t>(evhttp_uri_get_port(uri) > 0 ? evhttp_uri_get_port(uri) : default_port);
    out.target = path && *path ? path : "/";
    if (query) out.target += std::string("?") + query;
  }
  evhttp_uri_free(uri);
  return ok;
}

// RFC 9110 7.2: the port is part of Host unless it is the scheme's default.
std::string host_header(const std::string& host, uint16_t port, bool tls) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  std::string h = v6 ? "[" + host + "]" : host;
  return port == (tls ? 443 : 80) ? h : h + ":" + std::to_string(port);
}

bool ip_literal(const std::string& host) {
  in6_addr a;
  return inet_pton(AF_INET, host.c_str(), &a) == 1 || inet_pton(AF_INET6, host.c_str(), &a) == 1;
}

// Keeps the reason a certificate was refused ("hostname mismatch") for the call's error.
int verify_callback(int ok, X509_STORE_CTX* store) {
  if (ok) return ok;
  SSL* ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* call = ssl ? static_cast<HttpCallbackClient::Call*>(SSL_get_app_data(ssl)) : nullptr;
  if (call && call->tls_error.empty()) {
    call->tls_error = std::string("tls: certificate verify failed: ") +
                      X509_verify_cert_error_string(X509_STORE_CTX_get_error(store));
  }
  return ok;
}

// Notes the end of the handshake: a connection that fails before it failed as TLS.
void info_callback(const SSL* ssl, int where, int) {
  auto* call = static_cast<HttpCallbackClient::Call*>(SSL_get_app_data(ssl));
  if (call && (where & SSL_CB_HANDSHAKE_DONE)) call->tls_handshaken = true;
}

// Whether evhttp's connection to the server is established (evhttp does not say).
bool connected(evhttp_connection* conn) {
  bufferevent* bev = evhttp_connection_get_bufferevent(conn);
  const evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  return fd >= 0 && ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0;
}

timeval to_timeval(std::chrono::milliseconds ms) {
  const int64_t n = std::max<int64_t>(ms.count(), 0);
  return timeval{static_cast<time_t>(n / 1000), static_cast<suseconds_t>((n % 1000) * 1000)};
}

}  // namespace

HttpCallbackClient::HttpCallbackClient(event_base* base, net::Resolver* resolver)
    : base_(base), resolver_(resolver) {}

HttpCallbackClient::~HttpCallbackClient() {
  // Pending requests go without callbacks.
  for (auto& [id, call] : calls_) call->release(base_, resolver_, false);
  calls_.clear();
}

std::shared_ptr<net::TlsContext> HttpCallbackClient::tls_context(const std::string& ca_file) {
  auto& ctx = tls_[ca_file];
  if (!ctx) ctx = net::TlsContext::client(ca_file, true);
  return ctx;
}

HttpCallbackClient::CallId HttpCallbackClient::post(const std::string& url, const std::string& form,
                                                    std::chrono::milliseconds timeout, Done done,
                                                    const std::string& tls_ca_file) {
  const CallId id = next_id_++;
  auto call = std::make_unique<Call>();
  Call* c = call.get();
  c->client = this;
  c->id = id;
  c->done = std::move(done);
  c->timeout = timeout;
  c->deadline = std::chrono::steady_clock::now() + timeout;
  c->form = form;
  calls_.emplace(id, std::move(call));
  c->timer = evtimer_new(base_, &HttpCallbackClient::on_timeout, c);
  ParsedUrl u;
  std::string failure;
  if (!parse_url(url, u)) {
    failure = "bad URL " + url;
  } else {
    if (u.tls) {
      try {
        c->tls = tls_context(tls_ca_file);
      } catch (const net::TlsError& e) {
        failure = e.what();
      }
    }
    c->host = u.host;
    c->port = u.port;
    c->target = u.target;
    if (!failure.empty()) {
      // no CA: answered from the loop below
    } else if (resolver_) {
      c->lookup =
          resolver_->resolve(u.host, u.port, [this, id](net::Resolution r) { resolved(id, std::move(r)); });
    } else if (auto a = net::Resolver::numeric(u.host, u.port)) {
      c->addresses.push_back(*a);
      failure = attempt(*c);
    } else {
      failure = "cannot resolve " + u.host + ": no resolver here";
    }
  }
  // A failure is answered from the loop too, like every other outcome.
  if (!failure.empty())
    c->done = [d = std::move(c->done), failure](int, std::string, std::string) { d(0, {}, failure); };
  const timeval tv = to_timeval(failure.empty() ? timeout : std::chrono::milliseconds(0));
  evtimer_add(c->timer, &tv);
  return id;
}

void HttpCallbackClient::resolved(CallId id, net::Resolution r) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  Call& c = *it->second;
  c.lookup.reset();
  if (!r.error.empty()) return finish(id, 0, {}, "cannot resolve " + c.host + ": " + r.error, false);
  c.addresses = std::move(r.addresses);
  if (std::string failure = attempt(c); !failure.empty()) finish(id, 0, {}, failure, false);
}

// A request to the next address (numeric: evhttp resolves nothing itself). Returns why it could
// not be sent, or "".
std::string HttpCallbackClient::attempt(Call& c) {
  const net::ResolvedAddress& a = c.addresses[c.next++];
  const std::string address = a.text();
  c.tls_error.clear();
  c.tls_handshaken = false;
  if (c.tls) {
    SSL* ssl = SSL_new(c.tls->native());
    if (!ssl) return "cannot create a TLS session for " + address;
    if (!ip_literal(c.host)) SSL_set_tlsext_host_name(ssl, c.host.c_str());  // SNI: names only
    SSL_set1_host(ssl, c.host.c_str());  // the certificate must name the URL's host (or IP)
    SSL_set_verify(ssl, SSL_VERIFY_PEER, &verify_callback);
    SSL_set_info_callback(ssl, &info_callback);
    SSL_set_app_data(ssl, &c);
    // The bufferevent owns the session (freed with it); the socket is evhttp's to connect.
    bufferevent* bev = bufferevent_openssl_socket_new(base_, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                      BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (!bev) {
      SSL_free(ssl);
      return "cannot create a TLS connection to " + address;
    }
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    c.conn = evhttp_connection_base_bufferevent_new(base_, nullptr, bev, address.c_str(), c.port);
  } else {
    c.conn = evhttp_connection_base_new(base_, nullptr, address.c_str(), c.port);
  }
  evhttp_request* req = c.conn ? evhttp_request_new(&HttpCallbackClient::on_response, &c) : nullptr;
  if (!req) return "cannot create a connection to " + address;
  // Called for a request already sent (an error after the connection was made), never for a
  // connection that failed: that one is tried at the next address.
  evhttp_request_set_error_cb(
      req, [](evhttp_request_error, void* arg) { static_cast<Call*>(arg)->request_failed = true; });
  evhttp_connection_set_max_body_size(c.conn, kMaxAnswerBody);
  evhttp_connection_set_max_headers_size(c.conn, 16 * 1024);
  evkeyvalq* h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Host", host_header(c.host, c.port, c.tls != nullptr).c_str());
  evhttp_add_header(h, "Content-Type", "application/x-www-form-urlencoded");
  evhttp_add_header(h, "Connection", "close");
  evbuffer_add(evhttp_request_get_output_buffer(req), c.form.data(), c.form.size());
  if (evhttp_make_request(c.conn, req, EVHTTP_REQ_POST, c.target.c_str()) != 0) {
    return "cannot send the request to " + address;  // libevent freed req
  }
  if (c.next < c.addresses.size()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - std::chrono::steady_clock::now());
    const timeval tv = to_timeval(left / static_cast<int64_t>(c.addresses.size() - c.next + 1));
    c.attempt_timer = evtimer_new(base_, &HttpCallbackClient::on_attempt_timeout, &c);
    evtimer_add(c.attempt_timer, &tv);
  }
  return {};
}

void HttpCallbackClient::next_address(Call& c, const std::string& why, bool inside_connection_callback) {
  c.failed += (c.failed.empty() ? "" : "; ") + c.addresses[c.next - 1].text() + ": " + why;
  c.release_connection(base_, inside_connection_callback);
  std::string failure =
      "cannot connect to " + host_header(c.host, c.port, c.tls != nullptr) + ": " + c.failed;
  if (c.next < c.addresses.size()) failure = attempt(c);
  if (!failure.empty()) finish(c.id, 0, {}, failure, inside_connection_callback);
}

void HttpCallbackClient::cancel(CallId id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  it->second->release(base_, resolver_, false);
  calls_.erase(it);
}

void HttpCallbackClient::on_timeout(int, short, void* arg) {
  auto* c = static_cast<Call*>(arg);
  c->client->finish(c->id, 0, {}, "timed out after " + std::to_string(c->timeout.count()) + " ms", false);
}

void HttpCallbackClient::on_attempt_timeout(int, short, void* arg) {
  auto* c = static_cast<Call*>(arg);
  event_free(std::exchange(c->attempt_timer, nullptr));
  // Connected (the request went out, the backend is slow): it keeps the rest of the time.
  if (connected(c->conn)) return;
  c->client->next_address(*c, "no answer in its share of the timeout", false);
}

void HttpCallbackClient::on_response(evhttp_request* req, void* arg) {
  auto* c = static_cast<Call*>(arg);
  const bool answered = req && evhttp_request_get_response_code(req) != 0;
  if (!answered && c->tls && !c->tls_handshaken) return c->client->next_address(*c, c->tls_failure(), true);
  if (req && !answered && !c->request_failed) {  // nothing was sent
    return c->client->next_address(*c, c->tls ? c->tls_failure() : "connection failed", true);
  }
  if (!answered) {
    return c->client->finish(c->id, 0, {}, "connection failed or answer larger than 64 KiB", true);
  }
  const char* location = evhttp_find_header(evhttp_request_get_input_headers(req), "Location");
  c->client->finish(c->id, evhttp_request_get_response_code(req), location ? location : "", {}, true);
}

void HttpCallbackClient::finish(CallId id, int status, std::string location, std::string failure,
                                bool inside_connection_callback) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  std::unique_ptr<Call> call = std::move(it->second);
  calls_.erase(it);
  call->release(base_, resolver_, inside_connection_callback);
  Done done = std::move(call->done);
  done(status, std::move(location), std::move(failure));
}

}  // namespace rill::http
