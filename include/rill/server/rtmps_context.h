#pragma once
// The TLS context of RTMPS listeners (rtmp.tls_listen): rtmp.tls_cert (PEM chain, leaf first,
// sent whole: OBS refuses incomplete chains) and rtmp.tls_key, TLS 1.2 or later, forward-secret
// AEAD ciphers only. Each worker makes its own at start, so a reload re-reads the files while
// the old workers keep their connections.
#include <memory>

#include "rill/config/config.h"
#include "rill/net/tls_connection.h"

namespace rill::server {

// Null when rtmp.tls_listen is empty. Throws net::TlsError naming the file that cannot be used.
std::shared_ptr<net::TlsContext> make_rtmps_context(const config::RtmpConfig& rtmp);

}  // namespace rill::server
