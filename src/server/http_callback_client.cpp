#include "rill/server/http_callback_client.h"

#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <utility>

namespace rill::server {

struct HttpCallbackClient::Call {
  HttpCallbackClient* client = nullptr;
  CallId id = 0;
  Done done;
  evhttp_connection* conn = nullptr;
  event* timer = nullptr;
  std::chrono::milliseconds timeout{0};
  // Frees the timer and the connection. Inside one of the connection's own callbacks the
  // connection goes on the next loop iteration (libevent still uses it); anywhere else at once, so
  // that no callback can reach this call afterwards.
  void release(event_base* base, bool inside_connection_callback) {
    if (timer) event_free(std::exchange(timer, nullptr));
    evhttp_connection* c = std::exchange(conn, nullptr);
    if (!c) return;
    if (!inside_connection_callback) return evhttp_connection_free(c);
    const timeval now{0, 0};
    event_base_once(base, -1, EV_TIMEOUT,
                    [](int, short, void* p) { evhttp_connection_free(static_cast<evhttp_connection*>(p)); }, c, &now);
  }
};

namespace {

struct ParsedUrl {
  std::string host;
  int port = 80;
  std::string target;  // path and query
};

bool parse_url(const std::string& url, ParsedUrl& out) {
  evhttp_uri* uri = evhttp_uri_parse(url.c_str());
  if (!uri) return false;
  const char* host = evhttp_uri_get_host(uri);
  const char* path = evhttp_uri_get_path(uri);
  const char* query = evhttp_uri_get_query(uri);
  const bool ok = host && *host;
  if (ok) {
    out.host = host;
    out.port = evhttp_uri_get_port(uri) > 0 ? evhttp_uri_get_port(uri) : 80;
    out.target = path && *path ? path : "/";
    if (query) out.target += std::string("?") + query;
  }
  evhttp_uri_free(uri);
  return ok;
}

}  // namespace

HttpCallbackClient::HttpCallbackClient(event_base* base) : base_(base) {
  // Host names resolve without blocking the loop; without a resolver, only addresses work well.
  dns_ = evdns_base_new(base_, EVDNS_BASE_INITIALIZE_NAMESERVERS);
}

HttpCallbackClient::~HttpCallbackClient() {
  for (auto& [id, call] : calls_) call->release(base_, false);  // pending requests go without callbacks
  calls_.clear();
  if (dns_) evdns_base_free(dns_, 0);
}

HttpCallbackClient::CallId HttpCallbackClient::post(const std::string& url, const std::string& form,
                                                    std::chrono::milliseconds timeout, Done done) {
  const CallId id = next_id_++;
  auto call = std::make_unique<Call>();
  call->client = this;
  call->id = id;
  call->done = std::move(done);
  call->timeout = timeout;
  Call* c = call.get();
  calls_.emplace(id, std::move(call));
  c->timer = evtimer_new(base_, &HttpCallbackClient::on_timeout, c);
  ParsedUrl u;
  std::string failure;
  if (!parse_url(url, u)) {
    failure = "bad URL " + url;
  } else {
    c->conn = evhttp_connection_base_new(base_, dns_, u.host.c_str(), static_cast<uint16_t>(u.port));
    evhttp_request* req = c->conn ? evhttp_request_new(&HttpCallbackClient::on_response, c) : nullptr;
    if (!req) {
      failure = "cannot create a connection to " + u.host;
    } else {
      evhttp_connection_set_max_body_size(c->conn, kMaxAnswerBody);
      evhttp_connection_set_max_headers_size(c->conn, 16 * 1024);
      evkeyvalq* h = evhttp_request_get_output_headers(req);
      evhttp_add_header(h, "Host", u.host.c_str());
      evhttp_add_header(h, "Content-Type", "application/x-www-form-urlencoded");
      evhttp_add_header(h, "Connection", "close");
      evbuffer_add(evhttp_request_get_output_buffer(req), form.data(), form.size());
      if (evhttp_make_request(c->conn, req, EVHTTP_REQ_POST, u.target.c_str()) != 0) {
        failure = "cannot send the request to " + url;  // libevent freed req
      }
    }
  }
  // A failure is answered from the loop too, like every other outcome.
  const auto after = failure.empty() ? timeout : std::chrono::milliseconds(0);
  if (!failure.empty()) c->done = [d = std::move(c->done), failure](int, std::string, std::string) { d(0, {}, failure); };
  const timeval tv{static_cast<time_t>(after.count() / 1000), static_cast<suseconds_t>((after.count() % 1000) * 1000)};
  evtimer_add(c->timer, &tv);
  return id;
}

void HttpCallbackClient::cancel(CallId id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  it->second->release(base_, false);
  calls_.erase(it);
}

void HttpCallbackClient::on_timeout(int, short, void* arg) {
  auto* c = static_cast<Call*>(arg);
  c->client->finish(c->id, 0, {}, "timed out after " + std::to_string(c->timeout.count()) + " ms", false);
}

void HttpCallbackClient::on_response(evhttp_request* req, void* arg) {
  auto* c = static_cast<Call*>(arg);
  if (!req || evhttp_request_get_response_code(req) == 0) {
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
  call->release(base_, inside_connection_callback);
  Done done = std::move(call->done);
  done(status, std::move(location), std::move(failure));
}

}  // namespace rill::server
