#include "rill/process/listeners.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace rill::process {
namespace {

struct Resolved {
  sockaddr_storage ss{};
  socklen_t len = 0;
};

Resolved resolve(const config::ListenAddress& addr) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port = std::to_string(addr.port);
  int rc = ::getaddrinfo(addr.host.empty() ? nullptr : addr.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res)
    throw std::runtime_error("cannot listen on " + addr.to_string() + ": " + ::gai_strerror(rc));
  Resolved r;
  std::memcpy(&r.ss, res->ai_addr, res->ai_addrlen);
  r.len = res->ai_addrlen;
  ::freeaddrinfo(res);
  return r;
}

[[noreturn]] void fail(const config::ListenAddress& addr, const char* what, int err) {
  throw std::runtime_error("cannot listen on " + addr.to_string() + ": " + what +
                           std::strerror(err));
}

int make_socket(const config::ListenAddress& addr, const Resolved& r, bool reuseport) {
  int fd = ::socket(r.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail(addr, "socket: ", errno);
  int one = 1;
  auto setopt = [&](int level, int name, const char* what) {
    if (::setsockopt(fd, level, name, &one, sizeof(one)) != 0) {
      int e = errno;
      ::close(fd);
      fail(addr, what, e);
    }
  };
  setopt(SOL_SOCKET, SO_REUSEADDR, "SO_REUSEADDR: ");
  if (reuseport) setopt(SOL_SOCKET, SO_REUSEPORT, "SO_REUSEPORT: ");
  if (r.ss.ss_family == AF_INET6) setopt(IPPROTO_IPV6, IPV6_V6ONLY, "IPV6_V6ONLY: ");
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&r.ss), r.len) != 0) {
    int e = errno;
    ::close(fd);
    fail(addr, "", e);
  }
  return fd;
}

}  // namespace

const char* to_string(ListenerKind kind) {
  switch (kind) {
    case ListenerKind::rtmp: return "rtmp";
    case ListenerKind::http: return "http";
    case ListenerKind::api: return "api";
    case ListenerKind::rtmps: return "rtmp.tls";
    case ListenerKind::https: return "http.tls";
    case ListenerKind::api_tls: return "api.tls";
  }
  return "?";
}

int bind_listener(const config::ListenAddress& addr, int backlog) {
  Resolved r = resolve(addr);
  int fd = make_socket(addr, r, true);
  if (::listen(fd, backlog) != 0) {
    int e = errno;
    ::close(fd);
    fail(addr, "listen: ", e);
  }
  return fd;
}

void check_address_free(const config::ListenAddress& addr) {
  if (addr.port == 0) return;
  Resolved r = resolve(addr);
  // Without SO_REUSEPORT this bind fails if anything is bound there, including the
  // SO_REUSEPORT sockets of another process of the same user.
  int fd = make_socket(addr, r, false);
  ::close(fd);
}

uint16_t bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

void raise_somaxconn(int wanted, spdlog::logger& log) {
  const char* path = "/proc/sys/net/core/somaxconn";
  int current = 0;
  {
    std::ifstream in(path);
    if (!(in >> current)) {
      log.debug("cannot read {}; listen backlog stays as the kernel allows", path);
      return;
    }
  }
  if (current >= wanted) return;
  {
    std::ofstream out(path);
    out << wanted << "\n";
    out.flush();
    if (out) {
      log.info("raised net.core.somaxconn from {} to {}", current, wanted);
      return;
    }
  }
  log.debug("net.core.somaxconn is {} and could not be raised to {} (listen backlogs are capped at {})",
            current, wanted, current);
}

namespace {

struct Want {
  ListenerKind kind;
  const config::ListenAddress* addr;
};

// Every address CFG listens on, by kind.
std::vector<Want> wanted_listeners(const config::Config& cfg) {
  std::vector<Want> wants;
  for (const auto& a : cfg.rtmp.listen) wants.push_back({ListenerKind::rtmp, &a});
  for (const auto& a : cfg.http.listen) wants.push_back({ListenerKind::http, &a});
  for (const auto& a : cfg.api.listen) wants.push_back({ListenerKind::api, &a});
  for (const auto& a : cfg.rtmp.tls_listen) wants.push_back({ListenerKind::rtmps, &a});
  for (const auto& a : cfg.http.tls_listen) wants.push_back({ListenerKind::https, &a});
  for (const auto& a : cfg.api.tls_listen) wants.push_back({ListenerKind::api_tls, &a});
  return wants;
}

}  // namespace

Listeners::~Listeners() { close_all(); }

size_t Listeners::adopt(const config::Config& cfg, const std::vector<InheritedListener>& inherited,
                        spdlog::logger& log) {
  const std::vector<Want> wants = wanted_listeners(cfg);
  size_t taken = 0;
  for (const auto& in : inherited) {
    auto want = std::find_if(wants.begin(), wants.end(), [&](const Want& w) {
      return in.kind == to_string(w.kind) && in.address == w.addr->to_string();
    });
    const bool known =
        want != wants.end() && std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
          return e.kind == want->kind && e.addr == *want->addr;
        });
    if (want == wants.end() || known) {
      for (int fd : in.fds) ::close(fd);
      log.info("closed inherited {} listener {}: not in the configuration", in.kind, in.address);
      continue;
    }
    for (int fd : in.fds) ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // cleared for the exec only
    entries_.push_back(Entry{want->kind, *want->addr, in.fds});
    taken += in.fds.size();
  }
  return taken;
}

std::vector<InheritedListener> Listeners::handed_over() const {
  std::vector<InheritedListener> out;
  for (const auto& e : entries_)
    out.push_back(InheritedListener{to_string(e.kind), e.addr.to_string(), e.fds});
  return out;
}

void Listeners::reconcile(const config::Config& cfg, uint32_t slots, spdlog::logger& log) {
  const std::vector<Want> wants = wanted_listeners(cfg);
  for (size_t i = 0; i < wants.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (wants[i].addr->port != 0 && *wants[i].addr == *wants[j].addr)
        throw std::runtime_error("cannot listen on " + wants[i].addr->to_string() + " for " +
                                 to_string(wants[i].kind) + ": already used by " +
                                 to_string(wants[j].kind) + ".listen");

  std::vector<Entry> next;
  std::vector<int> created;  // closed again if anything fails
  std::vector<bool> reused(entries_.size(), false);
  try {
    for (const auto& w : wants) {
      Entry e{w.kind, *w.addr, {}};
      auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& old) {
        return old.kind == w.kind && old.addr == *w.addr;
      });
      config::ListenAddress bind_addr = *w.addr;
      if (it != entries_.end()) {
        reused[static_cast<size_t>(it - entries_.begin())] = true;
        for (uint32_t s = 0; s < slots && s < it->fds.size(); ++s) e.fds.push_back(it->fds[s]);
        if (!e.fds.empty()) bind_addr.port = bound_port(e.fds.front());
      } else {
        check_address_free(bind_addr);
      }
      while (e.fds.size() < slots) {
        int fd = bind_listener(bind_addr);
        created.push_back(fd);
        e.fds.push_back(fd);
        if (bind_addr.port == 0) bind_addr.port = bound_port(fd);
      }
      next.push_back(std::move(e));
    }
  } catch (...) {
    for (int fd : created) ::close(fd);
    throw;
  }

  // Commit: close what the new set does not keep.
  for (size_t i = 0; i < entries_.size(); ++i) {
    auto& old = entries_[i];
    size_t keep = reused[i] ? std::min<size_t>(slots, old.fds.size()) : 0;
    for (size_t s = keep; s < old.fds.size(); ++s) ::close(old.fds[s]);
    if (!reused[i])
      log.info("closed {} listener {}", to_string(old.kind), old.addr.to_string());
  }
  for (const auto& e : next) {
    bool is_new = std::none_of(entries_.begin(), entries_.end(), [&](const Entry& old) {
      return old.kind == e.kind && old.addr == e.addr;
    });
    if (is_new) {
      uint16_t port = e.fds.empty() ? 0 : bound_port(e.fds.front());
      log.info("listening for {} on {} (port {}, {} socket{}, backlog {})", to_string(e.kind),
               e.addr.to_string(), port, e.fds.size(), e.fds.size() == 1 ? "" : "s", kListenBacklog);
    }
  }
  entries_ = std::move(next);
}

std::vector<int> Listeners::fds(ListenerKind kind, uint32_t slot) const {
  std::vector<int> out;
  for (const auto& e : entries_)
    if (e.kind == kind && slot < e.fds.size()) out.push_back(e.fds[slot]);
  return out;
}

std::vector<net::ListenSocket> Listeners::for_slot(uint32_t slot) const {
  std::vector<net::ListenSocket> out;
  for (const auto& e : entries_) {
    if (slot >= e.fds.size()) continue;
    const bool tls = e.kind == ListenerKind::rtmps || e.kind == ListenerKind::https || e.kind == ListenerKind::api_tls;
    const net::ListenService service = e.kind == ListenerKind::rtmp || e.kind == ListenerKind::rtmps ? net::ListenService::Rtmp
                                       : e.kind == ListenerKind::http || e.kind == ListenerKind::https ? net::ListenService::Http
                                                                                                       : net::ListenService::Api;
    out.push_back(net::ListenSocket{service, tls, e.fds[slot]});
  }
  return out;
}

std::vector<int> Listeners::all_fds() const {
  std::vector<int> out;
  for (const auto& e : entries_) out.insert(out.end(), e.fds.begin(), e.fds.end());
  return out;
}

size_t Listeners::socket_count() const {
  size_t n = 0;
  for (const auto& e : entries_) n += e.fds.size();
  return n;
}

void Listeners::close_except_slot(uint32_t slot) {
  for (auto& e : entries_) {
    for (size_t s = 0; s < e.fds.size(); ++s)
      if (s != slot) ::close(e.fds[s]);
    if (slot < e.fds.size()) {
      int keep = e.fds[slot];
      e.fds.assign(slot + 1, -1);
      e.fds[slot] = keep;
    } else {
      e.fds.clear();
    }
  }
}

void Listeners::close_all() {
  for (auto& e : entries_)
    for (int fd : e.fds)
      if (fd >= 0) ::close(fd);
  entries_.clear();
}

}  // namespace rill::process
