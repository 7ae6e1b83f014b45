#pragma once
// HandshakeMac: the HMAC-SHA256 of the RTMP complex handshake (rtmp_handshake.h), set up once for
// all the handshakes of its owner — a worker's RTMP sessions, a client tool's connections.
//
// OpenSSL's one-shot HMAC() looks up the HMAC and SHA-256 implementations and derives the key's
// inner and outer pads on every call; a handshake makes four or five such calls, all but one under
// one of the four constant keys (Adobe's client and server keys, partial and full). Here
// HMAC is looked up once, each constant key is kept as a keyed context (made on its first use),
// and a digest re-initialises it, which restores the keyed state without deriving the pads again;
// a per-handshake key (S2/C2 are keyed by a digest of the peer's digest) reuses one context too.
//
// The contexts are reused, so a HandshakeMac belongs to one thread (a worker's loop).
#include <openssl/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

namespace rill::protocol {

class HandshakeMac {
 public:
  enum class Key : uint8_t { ClientPartial, ClientFull, ServerPartial, ServerFull };
  static constexpr size_t kKeys = 4;
  using Digest = std::array<uint8_t, 32>;
  using Parts = std::initializer_list<std::span<const uint8_t>>;

  // Throws std::runtime_error when OpenSSL has no HMAC or SHA-256 to give.
  HandshakeMac();
  ~HandshakeMac();
  HandshakeMac(const HandshakeMac&) = delete;
  HandshakeMac& operator=(const HandshakeMac&) = delete;

  // HMAC-SHA256 of the concatenation of `parts` under one of the constant keys.
  Digest digest(Key key, Parts parts);
  // Under any key.
  Digest digest(std::span<const uint8_t> key, Parts parts);

 private:
  EVP_MAC_CTX* new_context(std::span<const uint8_t> key) const;
  static Digest finish(EVP_MAC_CTX* ctx, Parts parts);

  EVP_MAC* mac_ = nullptr;
  std::array<EVP_MAC_CTX*, kKeys> keyed_{};  // null until the key's first use
  EVP_MAC_CTX* any_key_ = nullptr;           // re-keyed by each digest(span, ...)
};

}  // namespace rill::protocol
