#include "rill/protocol/rtmp_handshake.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "rill/protocol/error.h"

namespace rill::protocol {
namespace {

// "Genuine Adobe Flash Player 001" (30 bytes) + 32 constant bytes: the client key.
constexpr uint8_t kClientKey[62] = {
    'G', 'e', 'n', 'u', 'i', 'n', 'e', ' ', 'A', 'd', 'o', 'b', 'e', ' ', 'F', 'l',
    'a', 's', 'h', ' ', 'P', 'l', 'a', 'y', 'e', 'r', ' ', '0', '0', '1',
    0xF0, 0xEE, 0xC2, 0x4A, 0x80, 0x68, 0xBE, 0xE8, 0x2E, 0x00, 0xD0, 0xD1, 0x02, 0x9E, 0x7E, 0x57,
    0x6E, 0xEC, 0x5D, 0x2D, 0x29, 0x80, 0x6F, 0xAB, 0x93, 0xB8, 0xE6, 0x36, 0xCF, 0xEB, 0x31, 0xAE};

// "Genuine Adobe Flash Media Server 001" (36 bytes) + the same 32 constant bytes: the server key.
constexpr uint8_t kServerKey[68] = {
    'G', 'e', 'n', 'u', 'i', 'n', 'e', ' ', 'A', 'd', 'o', 'b', 'e', ' ', 'F', 'l', 'a', 's',
    'h', ' ', 'M', 'e', 'd', 'i', 'a', ' ', 'S', 'e', 'r', 'v', 'e', 'r', ' ', '0', '0', '1',
    0xF0, 0xEE, 0xC2, 0x4A, 0x80, 0x68, 0xBE, 0xE8, 0x2E, 0x00, 0xD0, 0xD1, 0x02, 0x9E, 0x7E, 0x57,
    0x6E, 0xEC, 0x5D, 0x2D, 0x29, 0x80, 0x6F, 0xAB, 0x93, 0xB8, 0xE6, 0x36, 0xCF, 0xEB, 0x31, 0xAE};

// Version field of our S1 when answering a complex handshake (clients only check it is non-zero;
// ffmpeg verifies S1/S2 digests when its second byte is >= 3).
constexpr uint8_t kServerVersion[4] = {0x0D, 0x0E, 0x0A, 0x0D};
// Version field of our C1 (a Flash Player 10 version, like librtmp's).
constexpr uint8_t kClientVersion[4] = {0x0A, 0x00, 0x2D, 0x02};

using Digest = HandshakeMac::Digest;
using Key = HandshakeMac::Key;
using Block = std::span<const uint8_t, kHandshakeSize>;

// Writes a digest into a 1536-byte block at the scheme's offset.
size_t sign_block(HandshakeMac& mac, std::span<uint8_t, kHandshakeSize> block, DigestScheme scheme, Key key) {
  size_t off = handshake::digest_offset(block, scheme);
  Digest d = handshake::block_digest(mac, block, off, key);
  std::memcpy(block.data() + off, d.data(), d.size());
  return off;
}

// The digest that ends S2/C2 of the complex handshake: HMAC(HMAC(full key, peer digest), the
// block's first 1504 bytes).
Digest response_digest(HandshakeMac& mac, Block block, Key full_key, std::span<const uint8_t> peer_digest) {
  const Digest k = mac.digest(full_key, {peer_digest});
  return mac.digest(k, {block.first(kHandshakeSize - kHandshakeDigestSize)});
}

// S2/C2 of the complex handshake: random 1504 bytes + their response digest.
void sign_response(HandshakeMac& mac, std::span<uint8_t, kHandshakeSize> block, Key full_key,
                   std::span<const uint8_t> peer_digest) {
  const Digest d = response_digest(mac, block, full_key, peer_digest);
  std::memcpy(block.data() + kHandshakeSize - kHandshakeDigestSize, d.data(), d.size());
}

bool response_ok(HandshakeMac& mac, Block block, Key full_key, std::span<const uint8_t> peer_digest) {
  const Digest d = response_digest(mac, block, full_key, peer_digest);
  return std::memcmp(d.data(), block.data() + kHandshakeSize - kHandshakeDigestSize, d.size()) == 0;
}

std::string describe_version(uint8_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = "expected RTMP version 3, got 0x";
  s += kHex[v >> 4];
  s += kHex[v & 0xF];
  if (v >= 0x20 && v < 0x7F) {
    s += " ('";
    s += char(v);
    s += "')";
  }
  if (v == 'G' || v == 'P' || v == 'H' || v == 'O' || v == 'D') {
    s += " \xE2\x80\x94 HTTP on the RTMP port?";  // em dash
  } else if (v == 0x16) {
    s += " \xE2\x80\x94 TLS on the plain RTMP port?";
  } else if (v == 6 || v == 8 || v == 9) {
    s += " \xE2\x80\x94 RTMPE (encrypted RTMP) is not supported";
  }
  return s;
}

}  // namespace

RandomFill system_random() {
  return [](std::span<uint8_t> out) {
    if (!out.empty() && RAND_bytes(out.data(), static_cast<int>(out.size())) != 1) {
      throw std::runtime_error("RAND_bytes failed");
    }
  };
}

namespace handshake {

size_t digest_offset(Block block, DigestScheme scheme) {
  // Scheme 0: offset = (b[8]+b[9]+b[10]+b[11]) % 728 + 12; scheme 1: same from 772, + 776.
  // Both keep the 32 digest bytes inside their 764-byte half of the block.
  const size_t base = scheme == DigestScheme::KeyFirst ? 772 : 8;
  size_t sum = size_t(block[base]) + block[base + 1] + block[base + 2] + block[base + 3];
  return sum % 728 + base + 4;
}

Digest block_digest(HandshakeMac& mac, Block block, size_t offset, Key key) {
  if (offset > kHandshakeSize - kHandshakeDigestSize) {
    throw std::invalid_argument("handshake digest offset out of range");
  }
  return mac.digest(key, {block.first(offset), block.subspan(offset + kHandshakeDigestSize)});
}

bool verify_digest(HandshakeMac& mac, Block block, DigestScheme scheme, Key key) {
  if (scheme == DigestScheme::None) return false;
  size_t off = digest_offset(block, scheme);
  Digest d = block_digest(mac, block, off, key);
  return std::memcmp(d.data(), block.data() + off, d.size()) == 0;
}

std::span<const uint8_t> client_key_full() { return kClientKey; }
std::span<const uint8_t> client_key_partial() { return {kClientKey, 30}; }
std::span<const uint8_t> server_key_full() { return kServerKey; }
std::span<const uint8_t> server_key_partial() { return {kServerKey, 36}; }

}  // namespace handshake

// ---------------------------------------------------------------------------------------------
// ServerHandshake

ServerHandshake::ServerHandshake(RandomFill random, HandshakeMac& mac) : random_(std::move(random)), mac_(mac) {}

size_t ServerHandshake::feed(std::span<const uint8_t> in) {
  size_t used = 0;
  while (used < in.size() && state_ != State::Done) {
    if (state_ == State::NeedC0C1) {
      // 5.2.2: C0 is one byte, the version; "A server that does not recognize the client's
      // requested version SHOULD respond with 3" -- we know only 3 and refuse anything else, so
      // that an HTTP request or TLS hello on this port is reported clearly.
      if (have_ == 0 && in[used] != kRtmpVersion) throw ProtocolError(describe_version(in[used]));
      size_t n = std::min(c0c1_.size() - have_, in.size() - used);
      std::memcpy(c0c1_.data() + have_, in.data() + used, n);
      have_ += n;
      used += n;
      if (have_ == c0c1_.size()) {
        answer_c1();
        state_ = State::NeedC2;
        have_ = 0;
      }
    } else {
      // C2: many clients send garbage here (spec 5.2.4 wants an echo of S1); consume it only.
      size_t n = std::min(kHandshakeSize - have_, in.size() - used);
      have_ += n;
      used += n;
      if (have_ == kHandshakeSize) state_ = State::Done;
    }
  }
  return used;
}

void ServerHandshake::answer_c1() {
  Block c1(c0c1_.data() + 1, kHandshakeSize);
  // A zero version field (C1 bytes 4..7) means a spec 5.2.3 simple handshake; otherwise look for
  // a client digest in either position.
  scheme_ = DigestScheme::None;
  if (c1[4] | c1[5] | c1[6] | c1[7]) {
    if (handshake::verify_digest(mac_, c1, DigestScheme::DigestFirst, Key::ClientPartial)) {
      scheme_ = DigestScheme::DigestFirst;
    } else if (handshake::verify_digest(mac_, c1, DigestScheme::KeyFirst, Key::ClientPartial)) {
      scheme_ = DigestScheme::KeyFirst;
    }
  }

  BufferRef out = SharedBuffer::create(1 + 2 * kHandshakeSize);
  uint8_t* p = out->tail();
  p[0] = kRtmpVersion;  // S0
  std::span<uint8_t, kHandshakeSize> s1(p + 1, kHandshakeSize);
  std::span<uint8_t, kHandshakeSize> s2(p + 1 + kHandshakeSize, kHandshakeSize);
  // S1: time (4 bytes, "may be 0") + zero/version (4 bytes) + 1528 random bytes (5.2.3).
  std::memset(s1.data(), 0, 8);
  random_(s1.subspan(8));
  if (scheme_ == DigestScheme::None) {
    // 5.2.4: S2 echoes C1 (time, time2, random echo).
    std::memcpy(s2.data(), c1.data(), kHandshakeSize);
  } else {
    std::memcpy(s1.data() + 4, kServerVersion, 4);
    sign_block(mac_, s1, scheme_, Key::ServerPartial);
    size_t c1_off = handshake::digest_offset(c1, scheme_);
    random_(s2.first(kHandshakeSize - kHandshakeDigestSize));
    sign_response(mac_, s2, Key::ServerFull, c1.subspan(c1_off, kHandshakeDigestSize));
  }
  out->commit(1 + 2 * kHandshakeSize);
  output_ = std::move(out);
}

// ---------------------------------------------------------------------------------------------
// ClientHandshake

ClientHandshake::ClientHandshake(RandomFill random, HandshakeMac& mac, bool complex)
    : random_(std::move(random)), mac_(mac), complex_(complex) {
  std::memset(c1_.data(), 0, 8);
  random_(std::span<uint8_t>(c1_).subspan(8));
  if (complex_) {
    std::memcpy(c1_.data() + 4, kClientVersion, 4);
    c1_digest_offset_ = sign_block(mac_, c1_, DigestScheme::DigestFirst, Key::ClientPartial);
  }
  output_ = SharedBuffer::create(1 + kHandshakeSize);
  output_->push_back(kRtmpVersion);
  output_->append(c1_.data(), c1_.size());
}

size_t ClientHandshake::feed(std::span<const uint8_t> in) {
  size_t used = 0;
  while (used < in.size() && state_ != State::Done) {
    if (state_ == State::NeedS0S1) {
      if (have_ == 0 && in[used] != kRtmpVersion) throw ProtocolError(describe_version(in[used]));
      size_t n = std::min(s0s1_.size() - have_, in.size() - used);
      std::memcpy(s0s1_.data() + have_, in.data() + used, n);
      have_ += n;
      used += n;
      if (have_ == s0s1_.size()) {
        on_s1();
        state_ = State::NeedS2;
        have_ = 0;
      }
    } else {
      size_t n = std::min(s2_.size() - have_, in.size() - used);
      std::memcpy(s2_.data() + have_, in.data() + used, n);
      have_ += n;
      used += n;
      if (have_ == s2_.size()) {
        on_s2();
        state_ = State::Done;
      }
    }
  }
  return used;
}

void ClientHandshake::on_s1() {
  Block s1(s0s1_.data() + 1, kHandshakeSize);
  DigestScheme scheme = DigestScheme::None;
  if (complex_) {
    // librtmp and ffmpeg accept the server digest in either position.
    if (handshake::verify_digest(mac_, s1, DigestScheme::DigestFirst, Key::ServerPartial)) {
      scheme = DigestScheme::DigestFirst;
    } else if (handshake::verify_digest(mac_, s1, DigestScheme::KeyFirst, Key::ServerPartial)) {
      scheme = DigestScheme::KeyFirst;
    }
  }
  s1_ok_ = scheme != DigestScheme::None;

  std::array<uint8_t, kHandshakeSize> c2;
  if (s1_ok_) {
    // C2 = random + HMAC(HMAC(full client key, S1 digest), random), as librtmp sends it.
    random_(std::span<uint8_t>(c2).first(kHandshakeSize - kHandshakeDigestSize));
    size_t off = handshake::digest_offset(s1, scheme);
    sign_response(mac_, c2, Key::ClientFull, s1.subspan(off, kHandshakeDigestSize));
  } else {
    std::memcpy(c2.data(), s1.data(), kHandshakeSize);  // 5.2.4: C2 echoes S1
  }
  size_t pending = output_ ? output_->size() : 0;
  BufferRef out = SharedBuffer::create(pending + kHandshakeSize);
  if (pending) out->append(output_->data(), pending);
  out->append(c2.data(), c2.size());
  output_ = std::move(out);
}

void ClientHandshake::on_s2() {
  s2_ok_ = complex_ && s1_ok_ &&
           response_ok(mac_, s2_, Key::ServerFull,
                       std::span<const uint8_t>(c1_.data() + c1_digest_offset_, kHandshakeDigestSize));
}

}  // namespace rill::protocol
