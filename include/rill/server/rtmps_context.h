#pragma once
// The TLS contexts of RTMPS (rtmp.tls_listen) and HTTPS (http.tls_listen, api.tls_listen) listeners: tls_cert (PEM chain, leaf first,
// sent whole: OBS refuses incomplete chains) and tls_key, TLS 1.2 or later, forward-secret
// AEAD ciphers only. Each worker makes its own at start, so a reload re-reads the files while
// the old workers keep their connections.
#include <memory>

#include "rill/config/config.h"
#include "rill/net/tls_connection.h"

namespace rill::server {

// Null when rtmp.tls_listen is empty. Throws net::TlsError naming the file that cannot be used.
std::shared_ptr<net::TlsContext> make_rtmps_context(const config::RtmpConfig& rtmp);
// The same for http.tls_listen (HTTPS), which also answers ALPN with http/1.1.
std::shared_ptr<net::TlsContext> make_https_context(const config::HttpConfig& http);
// HTTPS for the API (api.tls_listen), with http.tls_cert and http.tls_key; null when api.tls_listen is empty.
std::shared_ptr<net::TlsContext> make_api_tls_context(const config::Config& config);

}  // namespace rill::server
