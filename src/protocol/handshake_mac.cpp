#include "rill/protocol/handshake_mac.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <stdexcept>

#include "rill/protocol/rtmp_handshake.h"

namespace rill::protocol {

namespace {

std::span<const uint8_t> key_bytes(HandshakeMac::Key k) {
  switch (k) {
    case HandshakeMac::Key::ClientPartial:
      return handshake::client_key_partial();
    case HandshakeMac::Key::ClientFull:
      return handshake::client_key_full();
    case HandshakeMac::Key::ServerPartial:
      return handshake::server_key_partial();
    case HandshakeMac::Key::ServerFull:
      return handshake::server_key_full();
  }
  return {};
}

// EVP_MAC_init takes a null key as "the key set before": an empty key must not be null.
const uint8_t* key_pointer(std::span<const uint8_t> key) {
  static constexpr uint8_t kNone = 0;
  return key.empty() ? &kNone : key.data();
}

}  // namespace

HandshakeMac::HandshakeMac() : mac_(EVP_MAC_fetch(nullptr, "HMAC", nullptr)) {
  if (!mac_) throw std::runtime_error("HMAC-SHA256: OpenSSL has no HMAC");
  try {
    any_key_ = new_context({});
  } catch (...) {
    EVP_MAC_free(mac_);
    throw;
  }
}

HandshakeMac::~HandshakeMac() {
  for (EVP_MAC_CTX* c : keyed_) EVP_MAC_CTX_free(c);
  EVP_MAC_CTX_free(any_key_);
  EVP_MAC_free(mac_);
}

EVP_MAC_CTX* HandshakeMac::new_context(std::span<const uint8_t> key) const {
  char sha256[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, sha256, 0),
                               OSSL_PARAM_construct_end()};
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac_);
  if (!ctx || EVP_MAC_init(ctx, key_pointer(key), key.size(), params) != 1) {
    EVP_MAC_CTX_free(ctx);
    throw std::runtime_error("HMAC-SHA256: OpenSSL could not key an HMAC with SHA-256");
  }
  return ctx;
}

HandshakeMac::Digest HandshakeMac::digest(Key key, Parts parts) {
  EVP_MAC_CTX*& ctx = keyed_[static_cast<size_t>(key)];
  if (!ctx) {
    ctx = new_context(key_bytes(key));
  } else if (EVP_MAC_init(ctx, nullptr, 0, nullptr) != 1) {  // back to the keyed state
    throw std::runtime_error("HMAC-SHA256: re-initialising a context failed");
  }
  return finish(ctx, parts);
}

HandshakeMac::Digest HandshakeMac::digest(std::span<const uint8_t> key, Parts parts) {
  if (EVP_MAC_init(any_key_, key_pointer(key), key.size(), nullptr) != 1)
    throw std::runtime_error("HMAC-SHA256: keying a context failed");
  return finish(any_key_, parts);
}

HandshakeMac::Digest HandshakeMac::finish(EVP_MAC_CTX* ctx, Parts parts) {
  for (std::span<const uint8_t> p : parts) {
    if (EVP_MAC_update(ctx, p.data(), p.size()) != 1) throw std::runtime_error("HMAC-SHA256 failed");
  }
  Digest out{};
  size_t len = 0;
  if (EVP_MAC_final(ctx, out.data(), &len, out.size()) != 1 || len != out.size())
    throw std::runtime_error("HMAC-SHA256 failed");
  return out;
}

}  // namespace rill::protocol
