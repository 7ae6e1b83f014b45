#include "rill/net/resolver.h"

#include <arpa/inet.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>

namespace rill::net {

// libevent may call back for a lookup after it was cancelled (a cancel is answered from the loop
// with EVUTIL_EAI_CANCEL), and that callback reads the evdns_base. So the evdns_base lives here,
// apart from the Resolver, and is freed only once no callback is owed any more.
struct Resolver::Shared {
  event_base* base = nullptr;
  evdns_base* dns = nullptr;
  std::map<LookupId, Query*> live;  // lookups whose owner still waits
  size_t owed = 0;                  // lookups libevent still owes a callback (live or cancelled)
  bool orphaned = false;            // the Resolver is gone
  LookupId next_id = 1;

  void free_if_done() {
    if (!orphaned || owed > 0) return;
    evdns_base_free(dns, 0);
    delete this;
  }
};

struct Resolver::Query {
  Shared* shared = nullptr;
  LookupId id = 0;
  Done done;
  evdns_getaddrinfo_request* req = nullptr;  // libevent owes a callback while set
  event* deliver = nullptr;                  // an answer known at once, delivered from the loop
  Resolution result;
  bool in_call = false;  // inside evdns_getaddrinfo(), which may answer at once
  bool answered = false;
  bool cancelled = false;
};

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// RFC 6761 6.4: name resolution libraries should answer names under .invalid negatively at once.
bool is_invalid_name(const std::string& host) {
  std::string h = lower(host);
  if (!h.empty() && h.back() == '.') h.pop_back();
  return h == "invalid" || (h.size() > 8 && h.compare(h.size() - 8, 8, ".invalid") == 0);
}

std::string lookup_error(int code) {
  switch (code) {
    case EVUTIL_EAI_NONAME:
      return "no such host";
    case EVUTIL_EAI_NODATA:
      return "no address for this name";
    case EVUTIL_EAI_FAIL:
      return "no answer from the nameservers";
    case EVUTIL_EAI_AGAIN:
      return "temporary failure in name resolution";
    default:
      return evutil_gai_strerror(code);
  }
}

Resolution resolution_of(int code, const evutil_addrinfo* ai) {
  Resolution r;
  if (code != 0) {
    r.error = lookup_error(code);
    return r;
  }
  for (; ai; ai = ai->ai_next) {
    if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) || ai->ai_addrlen > sizeof(sockaddr_storage))
      continue;
    ResolvedAddress a;
    std::memcpy(&a.addr, ai->ai_addr, ai->ai_addrlen);
    a.len = static_cast<socklen_t>(ai->ai_addrlen);
    const bool seen = std::any_of(r.addresses.begin(), r.addresses.end(), [&](const ResolvedAddress& b) {
      return b.len == a.len && std::memcmp(&b.addr, &a.addr, a.len) == 0;
    });
    if (!seen) r.addresses.push_back(a);
  }
  if (r.addresses.empty()) r.error = "no IPv4 or IPv6 address for this name";
  return r;
}

std::string read_files(evdns_base* dns, const Resolver::Files& files) {
  std::string note;
  // Everything of resolv.conf (nameservers, search, options such as timeout:) but the hosts file,
  // which comes from files.hosts.
  const int rc =
      evdns_base_resolv_conf_parse(dns, DNS_OPTIONS_ALL & ~DNS_OPTION_HOSTSFILE, files.resolv_conf.c_str());
  if (rc == 6) {
    note =
        "no nameserver in " + files.resolv_conf + ": names not in " + files.hosts + " are asked of 127.0.0.1";
  } else if (rc != 0) {
    note = "cannot read " + files.resolv_conf + " (evdns error " + std::to_string(rc) + "): names not in " +
           files.hosts + " are asked of 127.0.0.1";
  }
  if (evdns_base_load_hosts(dns, files.hosts.c_str()) != 0) {
    evdns_base_load_hosts(dns, nullptr);  // localhost at least
    note += std::string(note.empty() ? "" : "; ") + "cannot read " + files.hosts;
  }
  return note;
}

}  // namespace

std::string ResolvedAddress::text() const {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, buf, sizeof buf);
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

std::optional<ResolvedAddress> Resolver::numeric(const std::string& host, uint16_t port) {
  ResolvedAddress a;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.addr);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.len = sizeof(sockaddr_in);
    return a;
  }
  const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  const std::string bare = bracketed ? host.substr(1, host.size() - 2) : host;
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.addr);
  if (inet_pton(AF_INET6, bare.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.len = sizeof(sockaddr_in6);
    return a;
  }
  return std::nullopt;
}

Resolver::Resolver(event_base* base) : Resolver(base, Files{}) {}

Resolver::Resolver(event_base* base, const Files& files) : shared_(new Shared) {
  shared_->base = base;
  // Configured from the files below. DISABLE_WHEN_INACTIVE: an idle resolver keeps no event
  // pending, so a loop with nothing else to do still ends.
  shared_->dns = evdns_base_new(base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
  if (!shared_->dns) {
    delete shared_;
    throw std::runtime_error("evdns_base_new failed");
  }
  note_ = read_files(shared_->dns, files);
}

// A lookup nobody waits for any more: freed now when its answer is already queued for delivery,
// else cancelled, and freed by the callback libevent still owes it.
void Resolver::drop(Query* q) {
  if (q->deliver) {
    event_free(q->deliver);
    delete q;
    return;
  }
  q->cancelled = true;
  q->done = nullptr;
  evdns_getaddrinfo_cancel(q->req);
}

Resolver::~Resolver() {
  std::map<LookupId, Query*> live = std::move(shared_->live);
  shared_->live.clear();
  for (auto& [id, q] : live) drop(q);
  shared_->orphaned = true;
  shared_->free_if_done();
}

size_t Resolver::pending() const { return shared_->live.size(); }

namespace {

void on_deliver(evutil_socket_t, short, void* arg);

void on_answer(int code, evutil_addrinfo* ai, void* arg) {
  auto* q = static_cast<Resolver::Query*>(arg);
  Resolution r = resolution_of(code, ai);
  if (ai) evutil_freeaddrinfo(ai);
  if (q->in_call) {  // answered inside evdns_getaddrinfo(): resolve() delivers it from the loop
    q->result = std::move(r);
    q->answered = true;
    return;
  }
  Resolver::Shared* shared = q->shared;
  q->req = nullptr;
  --shared->owed;
  if (q->cancelled) {
    delete q;
    return shared->free_if_done();
  }
  shared->live.erase(q->id);
  Resolver::Done done = std::move(q->done);
  delete q;
  done(std::move(r));
}

void on_deliver(evutil_socket_t, short, void* arg) {
  auto* q = static_cast<Resolver::Query*>(arg);
  event_free(q->deliver);
  q->shared->live.erase(q->id);
  Resolver::Done done = std::move(q->done);
  Resolution r = std::move(q->result);
  delete q;
  done(std::move(r));
}

void deliver_later(Resolver::Query* q, Resolution r) {
  q->result = std::move(r);
  q->deliver = event_new(q->shared->base, -1, 0, &on_deliver, q);
  event_active(q->deliver, EV_TIMEOUT, 1);
}

}  // namespace

Resolver::LookupId Resolver::resolve(const std::string& host, uint16_t port, Done done) {
  auto* q = new Query;
  q->shared = shared_;
  q->id = shared_->next_id++;
  q->done = std::move(done);
  shared_->live.emplace(q->id, q);
  if (auto a = numeric(host, port)) {
    deliver_later(q, Resolution{{*a}, {}});
    return q->id;
  }
  if (is_invalid_name(host)) {
    deliver_later(q, Resolution{{}, "no such host (a .invalid name, RFC 6761)"});
    return q->id;
  }
  evutil_addrinfo hints{};
  hints.ai_family = AF_UNSPEC;  // IPv4 and IPv6, as the hosts file or the nameservers give them
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  const std::string service = std::to_string(port);
  q->in_call = true;
  evdns_getaddrinfo_request* req =
      evdns_getaddrinfo(shared_->dns, host.c_str(), service.c_str(), &hints, &on_answer, q);
  q->in_call = false;
  if (!req) {  // answered at once (the hosts file), or failed at once
    deliver_later(q, q->answered ? std::move(q->result) : Resolution{{}, "lookup could not start"});
    return q->id;
  }
  q->req = req;
  ++shared_->owed;
  return q->id;
}

void Resolver::cancel(LookupId id) {
  auto it = shared_->live.find(id);
  if (it == shared_->live.end()) return;
  Query* q = it->second;
  shared_->live.erase(it);
  drop(q);
}

}  // namespace rill::net
