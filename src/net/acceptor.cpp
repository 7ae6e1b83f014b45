#include "rill/net/acceptor.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace rill::net {

namespace {
constexpr int kMaxAcceptsPerWakeup = 1024;
}  // namespace

const char* to_string(ListenService s) {
  switch (s) {
    case ListenService::Rtmp:
      return "rtmp";
    case ListenService::Http:
      return "http";
    case ListenService::Api:
      return "api";
  }
  return "?";
}

Acceptor::Acceptor(event_base* base, int listen_fd, std::string what, std::shared_ptr<spdlog::logger> log,
                   OnAccept on_accept)
    : what_(std::move(what)), log_(std::move(log)), on_accept_(std::move(on_accept)) {
  fd_ = UniqueFd(::fcntl(listen_fd, F_DUPFD_CLOEXEC, 0));
  if (!fd_) {
    log_->error("{}: cannot accept on listener fd {}: {}", what_, listen_fd, std::strerror(errno));
    return;
  }
  evutil_make_socket_nonblocking(fd_.get());
  ev_ = event_new(base, fd_.get(), EV_READ | EV_PERSIST, &Acceptor::on_readable, this);
  if (!ev_ || event_add(ev_, nullptr) != 0) {
    log_->error("{}: cannot watch listener fd {}", what_, listen_fd);
    if (ev_) event_free(ev_);
    ev_ = nullptr;
    fd_.reset();
  }
}

Acceptor::~Acceptor() { stop(); }

void Acceptor::stop() {
  if (ev_) event_free(ev_);
  ev_ = nullptr;
  fd_.reset();
}

void Acceptor::on_readable(int, short, void* arg) { static_cast<Acceptor*>(arg)->accept_all(); }

void Acceptor::accept_all() {
  for (int i = 0; i < kMaxAcceptsPerWakeup && ev_; ++i) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd = ::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE)
        log_->error("{}: accept: {} (raise LimitNOFILE)", what_, std::strerror(errno));
      return;
    }
    on_accept_(UniqueFd(fd), ss);  // may stop() this acceptor: the loop checks ev_
  }
}

}  // namespace rill::net
