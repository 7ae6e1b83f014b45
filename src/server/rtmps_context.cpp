#include "rill/server/rtmps_context.h"

#include <openssl/ssl.h>

namespace rill::server {

namespace {

// TLS 1.2: ECDHE with AES-GCM or ChaCha20-Poly1305 (TLS 1.3 suites are all AEAD already).
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

std::shared_ptr<net::TlsContext> server_context(const std::optional<std::string>& cert,
                                                const std::optional<std::string>& key) {
  auto ctx = net::TlsContext::server(cert.value_or(""), key.value_or(""));
  if (SSL_CTX_set_cipher_list(ctx->native(), kTls12Ciphers) != 1) {
    throw net::TlsError("tls: no usable cipher in the cipher list");
  }
  SSL_CTX_set_options(ctx->native(), SSL_OP_CIPHER_SERVER_PREFERENCE);
  return ctx;
}

// ALPN (RFC 7301): http/1.1 when the client offers it; otherwise no protocol is selected.
int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
                  void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof kHttp11, in, inlen) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

std::shared_ptr<net::TlsContext> https_context(const std::optional<std::string>& cert,
                                               const std::optional<std::string>& key) {
  auto ctx = server_context(cert, key);
  SSL_CTX_set_alpn_select_cb(ctx->native(), &select_http11, nullptr);
  return ctx;
}

}  // namespace

std::shared_ptr<net::TlsContext> make_rtmps_context(const config::RtmpConfig& rtmp) {
  if (rtmp.tls_listen.empty()) return nullptr;
  return server_context(rtmp.tls_cert, rtmp.tls_key);
}

std::shared_ptr<net::TlsContext> make_https_context(const config::HttpConfig& http) {
  if (http.tls_listen.empty()) return nullptr;
  return https_context(http.tls_cert, http.tls_key);
}

std::shared_ptr<net::TlsContext> make_api_tls_context(const config::Config& config) {
  if (config.api.tls_listen.empty()) return nullptr;
  return https_context(config.http.tls_cert, config.http.tls_key);
}

}  // namespace rill::server
