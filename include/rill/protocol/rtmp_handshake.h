#pragma once
// RTMP handshake (RTMP spec 1.0, section 5.2), plus the "complex" digest handshake that
// Flash-era clients, librtmp (OBS, rtmpdump, GStreamer) and ffmpeg use: C1/S1 carry an
// HMAC-SHA256 digest at an offset derived from the block itself, and S2/C2 end with an HMAC keyed
// by the peer's digest. ffmpeg, when playing, refuses a server whose S1/S2 do not verify.
//
// Pure bytes in / bytes out. Randomness is an input (RandomFill), so tests are deterministic;
// the session passes system_random(). The HMACs are computed by a HandshakeMac (handshake_mac.h)
// that the owner of the handshakes keeps for all of them (a worker: one for its RTMP sessions).
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "rill/core/buffer.h"
#include "rill/protocol/handshake_mac.h"

namespace rill::protocol {

inline constexpr size_t kHandshakeSize = 1536;     // C1, C2, S1, S2 (spec 5.2.3, 5.2.4)
inline constexpr uint8_t kRtmpVersion = 3;          // C0/S0 (spec 5.2.2)
inline constexpr size_t kHandshakeDigestSize = 32;  // SHA-256

// Fills the span with random bytes.
using RandomFill = std::function<void(std::span<uint8_t>)>;
// OpenSSL RAND_bytes; throws std::runtime_error if the RNG fails.
RandomFill system_random();

// Digest position schemes of the complex handshake: scheme 0 ("digest first", offset from the 4
// bytes at 8) and scheme 1 ("key first", offset from the 4 bytes at 772).
enum class DigestScheme : int8_t { None = -1, DigestFirst = 0, KeyFirst = 1 };

// Low-level helpers (exposed for tests and tools).
namespace handshake {
// Offset of the 32-byte digest inside a 1536-byte block for the given scheme (0 or 1).
size_t digest_offset(std::span<const uint8_t, kHandshakeSize> block, DigestScheme scheme);
// HMAC-SHA256 over the block minus the 32 digest bytes at `offset`.
HandshakeMac::Digest block_digest(HandshakeMac& mac, std::span<const uint8_t, kHandshakeSize> block,
                                  size_t offset, HandshakeMac::Key key);
// True if the block carries a valid digest at the scheme's offset, keyed with `key`.
bool verify_digest(HandshakeMac& mac, std::span<const uint8_t, kHandshakeSize> block, DigestScheme scheme,
                   HandshakeMac::Key key);
// The keys: the first 30 (client) / 36 (server) bytes are the "partial" keys used for C1/S1.
std::span<const uint8_t> client_key_full();     // "Genuine Adobe Flash Player 001" + 32 bytes
std::span<const uint8_t> client_key_partial();  // 30 bytes
std::span<const uint8_t> server_key_full();     // "Genuine Adobe Flash Media Server 001" + 32 bytes
std::span<const uint8_t> server_key_partial();  // 36 bytes
}  // namespace handshake

// Server side: consumes C0+C1 (1537 bytes) then C2 (1536 bytes), in pieces of any size.
// As soon as C0C1 are complete, take_output() returns S0+S1+S2 (3073 bytes) to send.
class ServerHandshake {
 public:
  enum class State { NeedC0C1, NeedC2, Done };

  // `mac` outlives the handshake.
  ServerHandshake(RandomFill random, HandshakeMac& mac);

  // Consumes handshake bytes and returns how many were consumed. Once the state is Done it
  // consumes nothing more: bytes beyond C2 in the same span (in.size() - returned) belong to the
  // chunk stream. Throws ProtocolError on a C0 other than 3 (checked on the first byte).
  size_t feed(std::span<const uint8_t> in);

  State state() const { return state_; }
  bool done() const { return state_ == State::Done; }
  // S0S1S2 once produced; empty before, and empty after it was taken.
  bool has_output() const { return static_cast<bool>(output_); }
  BufferRef take_output() { return std::move(output_); }
  // How the client's C1 was answered: a digest scheme (complex) or None (simple, S2 = echo of C1).
  DigestScheme scheme() const { return scheme_; }
  bool complex() const { return scheme_ != DigestScheme::None; }

 private:
  void answer_c1();

  RandomFill random_;
  HandshakeMac& mac_;
  State state_ = State::NeedC0C1;
  DigestScheme scheme_ = DigestScheme::None;
  std::array<uint8_t, 1 + kHandshakeSize> c0c1_{};
  size_t have_ = 0;  // bytes of the current phase received
  BufferRef output_;
};

// Client side (rill-bench, relays, edge pull): C0C1 is ready at construction (complex, scheme 0,
// like librtmp/ffmpeg; or simple). Consumes S0S1S2; C2 is ready once S0S1 are in.
class ClientHandshake {
 public:
  enum class State { NeedS0S1, NeedS2, Done };

  // `mac` outlives the handshake.
  ClientHandshake(RandomFill random, HandshakeMac& mac, bool complex = true);

  // Consumes server bytes; returns how many were consumed (bytes after S2 are not consumed).
  // Throws ProtocolError if S0 is not 3.
  size_t feed(std::span<const uint8_t> in);

  State state() const { return state_; }
  bool done() const { return state_ == State::Done; }
  // First C0C1 (1537 bytes), then, after S0S1, C2 (1536 bytes); if C0C1 was not taken yet when
  // C2 is produced, both come in one buffer.
  bool has_output() const { return static_cast<bool>(output_); }
  BufferRef take_output() { return std::move(output_); }
  // True when S1 carries a valid FMS digest (either scheme) and S2 ends with the HMAC keyed by
  // our C1 digest. Nothing is enforced: a simple-handshake server yields false.
  bool server_digest_ok() const { return s1_ok_ && s2_ok_; }

 private:
  void on_s1();
  void on_s2();

  RandomFill random_;
  HandshakeMac& mac_;
  bool complex_;
  State state_ = State::NeedS0S1;
  std::array<uint8_t, kHandshakeSize> c1_{};
  std::array<uint8_t, 1 + kHandshakeSize> s0s1_{};
  std::array<uint8_t, kHandshakeSize> s2_{};
  size_t have_ = 0;
  size_t c1_digest_offset_ = 0;
  bool s1_ok_ = false;
  bool s2_ok_ = false;
  BufferRef output_;
};

}  // namespace rill::protocol
