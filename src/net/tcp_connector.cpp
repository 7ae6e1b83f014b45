#include "rill/net/tcp_connector.h"

#include <event2/event.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace rill::net {

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  const int64_t n = std::max<int64_t>(ms.count(), 1);
  return timeval{static_cast<time_t>(n / 1000), static_cast<suseconds_t>((n % 1000) * 1000)};
}

}  // namespace

void TcpConnector::start(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
                         Done done) {
  cancel();
  host_ = host;
  port_ = port;
  numeric_host_ = Resolver::numeric(host, port).has_value();
  timeout_ = timeout;
  deadline_ = std::chrono::steady_clock::now() + timeout;
  done_ = std::move(done);
  deadline_ev_.reset(evtimer_new(base_, &TcpConnector::on_deadline, this));
  const timeval tv = to_timeval(timeout);
  evtimer_add(deadline_ev_.get(), &tv);
  if (resolver_) {
    lookup_ = resolver_->resolve(host, port, [this](Resolution r) {
      lookup_.reset();
      resolved(std::move(r));
    });
    return;
  }
  auto a = Resolver::numeric(host, port);
  numeric_ = a ? Resolution{{*a}, {}} : Resolution{{}, "not a numeric address, and no resolver here"};
  step_ev_.reset(event_new(base_, -1, 0, &TcpConnector::on_resolved_now, this));
  event_active(step_ev_.get(), EV_TIMEOUT, 1);
}

void TcpConnector::cancel() {
  if (lookup_ && resolver_) resolver_->cancel(*lookup_);
  lookup_.reset();
  attempt_ev_.reset();
  deadline_ev_.reset();
  step_ev_.reset();
  fd_.reset();
  addresses_.clear();
  failures_.clear();
  next_ = 0;
  done_ = nullptr;
}

void TcpConnector::on_resolved_now(int, short, void* arg) {
  auto* self = static_cast<TcpConnector*>(arg);
  self->step_ev_.reset();
  self->resolved(std::exchange(self->numeric_, {}));
}

void TcpConnector::resolved(Resolution r) {
  if (!r.error.empty()) return fail("cannot resolve " + host_ + ": " + r.error);
  addresses_ = std::move(r.addresses);
  next_ = 0;
  try_next();
}

void TcpConnector::try_next() {
  attempt_ev_.reset();
  fd_.reset();
  while (next_ < addresses_.size()) {
    const ResolvedAddress& a = addresses_[next_++];
    current_ = a.text();
    std::string why;
    fd_ = connect_tcp(reinterpret_cast<const sockaddr*>(&a.addr), a.len, &why);
    if (!fd_) {
      failures_.push_back(numeric_host_ ? why : current_ + ": " + why);
      continue;
    }
    attempt_ev_.reset(event_new(base_, fd_.get(), EV_WRITE, &TcpConnector::on_writable, this));
    if (next_ == addresses_.size()) {
      event_add(attempt_ev_.get(), nullptr);  // the last address: the deadline bounds it
    } else {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
      const auto share = left / static_cast<int64_t>(addresses_.size() - next_ + 1);
      const timeval tv = to_timeval(share);
      event_add(attempt_ev_.get(), &tv);
    }
    return;
  }
  fail(tried());
}

void TcpConnector::on_writable(int /*fd*/, short what, void* arg) {
  auto* self = static_cast<TcpConnector*>(arg);
  const std::string prefix = self->numeric_host_ ? std::string() : self->current_ + ": ";
  if (what & EV_TIMEOUT) {
    self->failures_.push_back(prefix + "no answer in its share of the timeout");
    return self->try_next();
  }
  if (int err = connect_result(self->fd_.get()); err != 0) {
    self->failures_.push_back(prefix + std::strerror(err));
    return self->try_next();
  }
  Result r;
  r.fd = std::move(self->fd_);
  r.address = self->current_;
  r.skipped = self->tried();
  self->finish(std::move(r));
}

void TcpConnector::on_deadline(int, short, void* arg) {
  auto* self = static_cast<TcpConnector*>(arg);
  std::string why = "timed out after " + std::to_string(self->timeout_.count()) + " ms";
  if (self->lookup_) {
    why += " resolving " + self->host_;
  } else {
    if (self->attempt_ev_)
      self->failures_.push_back(self->numeric_host_ ? "no answer" : self->current_ + ": no answer");
    if (!self->failures_.empty()) why += " (" + self->tried() + ")";
  }
  self->fail(why);
}

std::string TcpConnector::tried() const {
  std::string s;
  for (const std::string& f : failures_) s += (s.empty() ? "" : "; ") + f;
  return s;
}

void TcpConnector::fail(const std::string& why) {
  const bool v6 = host_.find(':') != std::string::npos && host_.front() != '[';  // never empty
  Result r;
  r.error = "connect to " + (v6 ? "[" + host_ + "]" : host_) + ":" + std::to_string(port_) + ": " + why;
  finish(std::move(r));
}

void TcpConnector::finish(Result r) {
  Done done = std::move(done_);
  cancel();
  done(std::move(r));  // may destroy this connector: nothing after it
}

}  // namespace rill::net
