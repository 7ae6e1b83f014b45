// Minimal worker (to be replaced by the RTMP/HTTP server): accepts and closes connections.
#include "rill/server/worker.h"

#include <event2/event.h>
#include <event2/listener.h>
#include <unistd.h>

namespace rill::server {

struct Worker::Impl {
  event_base* base;
  WorkerContext ctx;
  std::vector<evconnlistener*> listeners;
};

static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void*) { close(fd); }

Worker::Worker(event_base* base, WorkerContext ctx) : impl_(new Impl{base, std::move(ctx), {}}) {}
Worker::~Worker() {
  for (auto* l : impl_->listeners) evconnlistener_free(l);
}
void Worker::start() {
  for (int fd : impl_->ctx.rtmp_fds)
    impl_->listeners.push_back(evconnlistener_new(impl_->base, on_accept, this, 0, -1, fd));
  for (int fd : impl_->ctx.http_fds)
    impl_->listeners.push_back(evconnlistener_new(impl_->base, on_accept, this, 0, -1, fd));
}
void Worker::drain(std::function<void()> on_drained) {
  for (auto* l : impl_->listeners) evconnlistener_disable(l);
  on_drained();
}
void Worker::stop_now() {
  for (auto* l : impl_->listeners) evconnlistener_disable(l);
}
size_t Worker::session_count() const { return 0; }

}  // namespace rill::server
