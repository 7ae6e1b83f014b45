// HTTPS for HttpServer (http.tls_listen): a second evhttp whose connections are OpenSSL
// bufferevents (libevent's bufferevent_openssl, accepting side), with the same request handler,
// the same connection counts and limits, and the settings of the plain one. A client that stalls
// in the handshake is closed by http.timeout like any silent connection.
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/ssl.h>

#include "rill/server/http_server.h"

namespace rill::server {

void HttpServer::listen_tls(int fd, std::shared_ptr<net::TlsContext> tls) {
  if (!https_) {
    https_ = evhttp_new(ctx_.base);
    configure(https_);
    evhttp_set_bevcb(https_, &HttpServer::on_new_tls_connection, this);
  }
  https_tls_ = std::move(tls);
  accept_on(https_, fd, bound_tls_);
}

// As on_new_connection, with a TLS bufferevent: evhttp sets its socket right after.
bufferevent* HttpServer::on_new_tls_connection(event_base* base, void* arg) {
  auto* self = static_cast<HttpServer*>(arg);
  SSL* ssl = SSL_new(self->https_tls_->native());
  if (!ssl) return nullptr;
  bufferevent* bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
  if (!bev) return nullptr;
  // Clients often close without close_notify; that ends the connection like EOF.
  bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
  bufferevent_incref(bev);
  self->pending_.push_back(bev);
  event_active(self->admit_ev_, EV_TIMEOUT, 0);
  return bev;
}

void HttpServer::stop_accepting_tls() {
  if (!https_) return;
  for (auto* b : bound_tls_) evhttp_del_accept_socket(https_, b);
  bound_tls_.clear();
  evhttp_set_gencb(https_, &HttpServer::reply_shutting_down, nullptr);
}

}  // namespace rill::server
