#include "rill/server/rtmps_context.h"

#include <openssl/ssl.h>

namespace rill::server {

namespace {

// TLS 1.2: ECDHE with AES-GCM or ChaCha20-Poly1305 (TLS 1.3 suites are all AEAD already).
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

}  // namespace

std::shared_ptr<net::TlsContext> make_rtmps_context(const config::RtmpConfig& rtmp) {
  if (rtmp.tls_listen.empty()) return nullptr;
  auto ctx = net::TlsContext::server(rtmp.tls_cert.value_or(""), rtmp.tls_key.value_or(""));
  if (SSL_CTX_set_cipher_list(ctx->native(), kTls12Ciphers) != 1) {
    throw net::TlsError("tls: no usable cipher in the RTMPS cipher list");
  }
  SSL_CTX_set_options(ctx->native(), SSL_OP_CIPHER_SERVER_PREFERENCE);
  return ctx;
}

}  // namespace rill::server
