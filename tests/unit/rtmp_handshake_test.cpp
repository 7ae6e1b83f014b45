// RTMP handshake: simple (spec 5.2) and complex (digest) variants. The digests are checked
// against an HMAC-SHA256 computed here with OpenSSL's EVP_MAC API from scratch each time,
// independently of the implementation (HandshakeMac's contexts, keyed once and reused).
#include <gtest/gtest.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rill/protocol/error.h"
#include "rill/protocol/rtmp_handshake.h"

using namespace rill;
using namespace rill::protocol;

namespace {

using Bytes = std::vector<uint8_t>;

const std::string kFpText = "Genuine Adobe Flash Player 001";
const std::string kFmsText = "Genuine Adobe Flash Media Server 001";
const uint8_t kTrailer[32] = {0xF0, 0xEE, 0xC2, 0x4A, 0x80, 0x68, 0xBE, 0xE8, 0x2E, 0x00, 0xD0,
                              0xD1, 0x02, 0x9E, 0x7E, 0x57, 0x6E, 0xEC, 0x5D, 0x2D, 0x29, 0x80,
                              0x6F, 0xAB, 0x93, 0xB8, 0xE6, 0x36, 0xCF, 0xEB, 0x31, 0xAE};

Bytes key(const std::string& text, bool full) {
  Bytes k(text.begin(), text.end());
  if (full) k.insert(k.end(), std::begin(kTrailer), std::end(kTrailer));
  return k;
}

// HMAC-SHA256 over the concatenation of parts, via EVP_MAC.
Bytes evp_hmac(const Bytes& k, std::initializer_list<std::pair<const uint8_t*, size_t>> parts) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac);
  char digest_name[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end()};
  static const uint8_t kNoKey = 0;  // a null key would mean "the key set before"
  EXPECT_EQ(EVP_MAC_init(ctx, k.empty() ? &kNoKey : k.data(), k.size(), params), 1);
  for (auto& [p, n] : parts) EXPECT_EQ(EVP_MAC_update(ctx, p, n), 1);
  Bytes out(32);
  size_t len = 0;
  EXPECT_EQ(EVP_MAC_final(ctx, out.data(), &len, out.size()), 1);
  EXPECT_EQ(len, 32u);
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  return out;
}

size_t offset_of(const uint8_t* block, int scheme) {
  size_t base = scheme == 0 ? 8 : 772;
  unsigned sum = block[base] + block[base + 1] + block[base + 2] + block[base + 3];
  return sum % 728 + base + 4;
}

// True if the 1536-byte block has a valid digest at the scheme's offset.
bool digest_ok(const uint8_t* block, int scheme, const Bytes& k) {
  size_t off = offset_of(block, scheme);
  Bytes d = evp_hmac(k, {{block, off}, {block + off + 32, 1536 - off - 32}});
  return std::memcmp(d.data(), block + off, 32) == 0;
}

// True if the block ends with HMAC(HMAC(full_key, peer_digest), block[0..1504)).
bool response_ok(const uint8_t* block, const Bytes& full_key, const uint8_t* peer_digest) {
  Bytes k2 = evp_hmac(full_key, {{peer_digest, 32}});
  Bytes d = evp_hmac(k2, {{block, 1504}});
  return std::memcmp(d.data(), block + 1504, 32) == 0;
}

RandomFill seeded(uint32_t seed) {
  auto rng = std::make_shared<std::mt19937>(seed);
  return [rng](std::span<uint8_t> out) {
    for (auto& b : out) b = static_cast<uint8_t>((*rng)());
  };
}

Bytes to_bytes(const BufferRef& b) { return Bytes(b.data(), b.data() + b.size()); }

Bytes random_block(uint32_t seed) {
  Bytes b(1536);
  seeded(seed)(b);
  return b;
}

}  // namespace

TEST(RtmpHandshake, ComplexClientAcceptedAndDigestsVerifyIndependently) {
  HandshakeMac mac;
  ClientHandshake client(seeded(1), mac);
  ASSERT_TRUE(client.has_output());
  Bytes c0c1 = to_bytes(client.take_output());
  ASSERT_EQ(c0c1.size(), 1537u);
  EXPECT_EQ(c0c1[0], 3);
  const uint8_t* c1 = c0c1.data() + 1;
  EXPECT_NE(c1[4] | c1[5] | c1[6] | c1[7], 0);
  ASSERT_TRUE(digest_ok(c1, 0, key(kFpText, false)));  // scheme 0, like librtmp

  ServerHandshake server(seeded(2), mac);
  EXPECT_EQ(server.feed(c0c1), 1537u);
  EXPECT_EQ(server.state(), ServerHandshake::State::NeedC2);
  EXPECT_TRUE(server.complex());
  EXPECT_EQ(server.scheme(), DigestScheme::DigestFirst);
  ASSERT_TRUE(server.has_output());
  Bytes s = to_bytes(server.take_output());
  ASSERT_EQ(s.size(), 3073u);
  EXPECT_FALSE(server.has_output());
  EXPECT_EQ(s[0], 3);
  const uint8_t* s1 = s.data() + 1;
  const uint8_t* s2 = s.data() + 1 + 1536;
  EXPECT_NE(s1[4] | s1[5] | s1[6] | s1[7], 0);
  EXPECT_GE(s1[5], 3);  // ffmpeg verifies S1/S2 when this byte is >= 3
  EXPECT_TRUE(digest_ok(s1, 0, key(kFmsText, false)));
  const uint8_t* c1_digest = c1 + offset_of(c1, 0);
  EXPECT_TRUE(response_ok(s2, key(kFmsText, true), c1_digest));

  EXPECT_EQ(client.feed(s), 3073u);
  EXPECT_TRUE(client.done());
  EXPECT_TRUE(client.server_digest_ok());
  Bytes c2 = to_bytes(client.take_output());
  ASSERT_EQ(c2.size(), 1536u);
  const uint8_t* s1_digest = s1 + offset_of(s1, 0);
  EXPECT_TRUE(response_ok(c2.data(), key(kFpText, true), s1_digest));

  EXPECT_EQ(server.feed(c2), 1536u);
  EXPECT_TRUE(server.done());
}

TEST(RtmpHandshake, ServerAnswersKeyFirstScheme) {
  HandshakeMac mac;
  Bytes c0c1(1537);
  c0c1[0] = 3;
  uint8_t* c1 = c0c1.data() + 1;
  seeded(7)(std::span<uint8_t>(c1, 1536));
  c1[0] = c1[1] = c1[2] = c1[3] = 0;
  c1[4] = 9; c1[5] = 0; c1[6] = 124; c1[7] = 2;  // ffmpeg's version
  size_t off = offset_of(c1, 1);
  Bytes d = evp_hmac(key(kFpText, false), {{c1, off}, {c1 + off + 32, 1536 - off - 32}});
  std::memcpy(c1 + off, d.data(), 32);

  ServerHandshake server(seeded(3), mac);
  server.feed(c0c1);
  EXPECT_EQ(server.scheme(), DigestScheme::KeyFirst);
  Bytes s = to_bytes(server.take_output());
  EXPECT_TRUE(digest_ok(s.data() + 1, 1, key(kFmsText, false)));
  EXPECT_TRUE(response_ok(s.data() + 1 + 1536, key(kFmsText, true), c1 + off));
}

TEST(RtmpHandshake, SimpleWhenC1VersionIsZero) {
  HandshakeMac mac;
  ClientHandshake client(seeded(4), mac, /*complex=*/false);
  Bytes c0c1 = to_bytes(client.take_output());
  EXPECT_EQ(c0c1[5] | c0c1[6] | c0c1[7] | c0c1[8], 0);

  ServerHandshake server(seeded(5), mac);
  server.feed(c0c1);
  EXPECT_FALSE(server.complex());
  Bytes s = to_bytes(server.take_output());
  ASSERT_EQ(s.size(), 3073u);
  // S1: zero version; S2 echoes C1.
  EXPECT_EQ(s[1 + 4] | s[1 + 5] | s[1 + 6] | s[1 + 7], 0);
  EXPECT_TRUE(std::equal(s.begin() + 1537, s.end(), c0c1.begin() + 1));

  client.feed(s);
  EXPECT_TRUE(client.done());
  EXPECT_FALSE(client.server_digest_ok());
  Bytes c2 = to_bytes(client.take_output());
  EXPECT_TRUE(std::equal(c2.begin(), c2.end(), s.begin() + 1));  // C2 echoes S1
  server.feed(c2);
  EXPECT_TRUE(server.done());
}

TEST(RtmpHandshake, VersionWithoutDigestFallsBackToSimple) {
  HandshakeMac mac;
  Bytes c0c1(1537);
  c0c1[0] = 3;
  Bytes r = random_block(9);
  std::copy(r.begin(), r.end(), c0c1.begin() + 1);
  c0c1[5] = 10;  // non-zero version, but no digest anywhere
  ServerHandshake server(seeded(6), mac);
  server.feed(c0c1);
  EXPECT_FALSE(server.complex());
  Bytes s = to_bytes(server.take_output());
  EXPECT_TRUE(std::equal(s.begin() + 1537, s.end(), c0c1.begin() + 1));
}

TEST(RtmpHandshake, RejectsHttpOnRtmpPort) {
  HandshakeMac mac;
  ServerHandshake server(seeded(1), mac);
  std::string req = "GET /live/stream.flv HTTP/1.1\r\nHost: x\r\n\r\n";
  try {
    server.feed(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(req.data()), req.size()));
    FAIL() << "expected ProtocolError";
  } catch (const ProtocolError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("expected RTMP version 3, got 0x47 ('G')"), std::string::npos) << what;
    EXPECT_NE(what.find("HTTP on the RTMP port?"), std::string::npos) << what;
  }
}

TEST(RtmpHandshake, RejectsOtherVersions) {
  HandshakeMac mac;
  for (uint8_t v : {0x00, 0x06, 0x16, 0xFF}) {
    ServerHandshake server(seeded(1), mac);
    uint8_t b[2] = {v, 0};
    EXPECT_THROW(server.feed(b), ProtocolError) << int(v);
  }
  ServerHandshake tls(seeded(1), mac);
  uint8_t hello[] = {0x16, 0x03, 0x01};
  try {
    tls.feed(hello);
    FAIL();
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("got 0x16"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("TLS"), std::string::npos);
  }
}

TEST(RtmpHandshake, FedOneByteAtATime) {
  HandshakeMac mac;
  ClientHandshake client(seeded(11), mac);
  Bytes c0c1 = to_bytes(client.take_output());

  ServerHandshake whole(seeded(12), mac);
  whole.feed(c0c1);
  Bytes expected = to_bytes(whole.take_output());

  ServerHandshake server(seeded(12), mac);
  for (size_t i = 0; i < c0c1.size(); ++i) {
    EXPECT_FALSE(server.has_output()) << i;
    EXPECT_EQ(server.feed(std::span<const uint8_t>(&c0c1[i], 1)), 1u);
  }
  ASSERT_TRUE(server.has_output());
  Bytes s = to_bytes(server.take_output());
  EXPECT_EQ(s, expected);

  // The client also takes S0S1S2 one byte at a time; C2 is ready as soon as S0S1 are in.
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(client.has_output(), i >= 1537) << i;
    EXPECT_EQ(client.feed(std::span<const uint8_t>(&s[i], 1)), 1u);
  }
  EXPECT_TRUE(client.done());
  EXPECT_TRUE(client.server_digest_ok());
  Bytes c2 = to_bytes(client.take_output());
  for (size_t i = 0; i < c2.size(); ++i) {
    EXPECT_FALSE(server.done());
    EXPECT_EQ(server.feed(std::span<const uint8_t>(&c2[i], 1)), 1u);
  }
  EXPECT_TRUE(server.done());
}

TEST(RtmpHandshake, LeftoverBytesAfterC2AreNotConsumed) {
  HandshakeMac mac;
  ClientHandshake client(seeded(21), mac);
  Bytes all = to_bytes(client.take_output());
  Bytes c2 = random_block(22);  // garbage C2 is accepted
  all.insert(all.end(), c2.begin(), c2.end());
  const Bytes chunk = {0x02, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0, 0, 0x10, 0};
  all.insert(all.end(), chunk.begin(), chunk.end());

  ServerHandshake server(seeded(23), mac);
  size_t used = server.feed(all);
  EXPECT_EQ(used, 1537u + 1536u);
  EXPECT_TRUE(server.done());
  EXPECT_TRUE(std::equal(all.begin() + used, all.end(), chunk.begin()));
  EXPECT_EQ(server.feed(chunk), 0u);  // nothing more consumed once done

  // Same split across two feeds: C2's tail and the chunk bytes together.
  ServerHandshake s2(seeded(23), mac);
  EXPECT_EQ(s2.feed(std::span<const uint8_t>(all.data(), 2000)), 2000u);
  EXPECT_EQ(s2.feed(std::span<const uint8_t>(all.data() + 2000, all.size() - 2000)), 3073u - 2000u);
  EXPECT_TRUE(s2.done());
}

TEST(RtmpHandshake, ClientLeftoverAndCombinedOutput) {
  HandshakeMac mac;
  ClientHandshake client(seeded(31), mac);
  // C0C1 not taken before S1 arrives: C0C1 and C2 come out together.
  ServerHandshake server(seeded(32), mac);
  ClientHandshake probe(seeded(31), mac);
  server.feed(to_bytes(probe.take_output()));
  Bytes s = to_bytes(server.take_output());
  s.push_back(0xAB);
  EXPECT_EQ(client.feed(s), 3073u);
  Bytes out = to_bytes(client.take_output());
  EXPECT_EQ(out.size(), 1537u + 1536u);
  EXPECT_TRUE(client.server_digest_ok());
}

TEST(RtmpHandshake, ClientRejectsBadServerVersion) {
  HandshakeMac mac;
  ClientHandshake client(seeded(41), mac);
  uint8_t s0[] = {'H', 'T', 'T', 'P'};
  EXPECT_THROW(client.feed(s0), ProtocolError);
}

TEST(RtmpHandshake, ClientFlagsForgedServerResponse) {
  HandshakeMac mac;
  ClientHandshake client(seeded(51), mac);
  ServerHandshake server(seeded(52), mac);
  server.feed(to_bytes(client.take_output()));
  Bytes s = to_bytes(server.take_output());
  s[3072] ^= 1;  // corrupt the S2 HMAC
  client.feed(s);
  EXPECT_TRUE(client.done());
  EXPECT_FALSE(client.server_digest_ok());
}

TEST(RtmpHandshake, DeterministicForSameRandomness) {
  HandshakeMac mac;
  auto run = [&mac] {
    ClientHandshake c(seeded(61), mac);
    ServerHandshake s(seeded(62), mac);
    s.feed(to_bytes(c.take_output()));
    return to_bytes(s.take_output());
  };
  EXPECT_EQ(run(), run());
}

TEST(RtmpHandshake, ClientAcceptsServerDigestInKeyFirstPosition) {
  HandshakeMac mac;
  // A server (built here by hand) that signs S1 with scheme 1 although the client used scheme 0.
  ClientHandshake client(seeded(71), mac);
  Bytes c0c1 = to_bytes(client.take_output());
  const uint8_t* c1 = c0c1.data() + 1;
  Bytes s(3073);
  s[0] = 3;
  uint8_t* s1 = s.data() + 1;
  uint8_t* s2 = s1 + 1536;
  seeded(72)(std::span<uint8_t>(s1, 3072));
  s1[4] = 4; s1[5] = 5; s1[6] = 0; s1[7] = 1;
  size_t off = offset_of(s1, 1);
  Bytes d = evp_hmac(key(kFmsText, false), {{s1, off}, {s1 + off + 32, 1536 - off - 32}});
  std::memcpy(s1 + off, d.data(), 32);
  Bytes k2 = evp_hmac(key(kFmsText, true), {{c1 + offset_of(c1, 0), 32}});
  Bytes sig = evp_hmac(k2, {{s2, 1504}});
  std::memcpy(s2 + 1504, sig.data(), 32);

  client.feed(s);
  EXPECT_TRUE(client.done());
  EXPECT_TRUE(client.server_digest_ok());
  Bytes c2 = to_bytes(client.take_output());
  EXPECT_TRUE(response_ok(c2.data(), key(kFpText, true), s1 + off));
}

TEST(RtmpHandshake, SystemRandomFills) {
  RandomFill r = system_random();
  Bytes a(64), b(64);
  r(a);
  r(b);
  EXPECT_NE(a, b);
  r(std::span<uint8_t>());  // empty is fine
}

// One HandshakeMac for many handshakes, as a worker keeps it: each reuse of a keyed context (and
// of the context re-keyed per S2/C2) gives the digests computed from scratch.
TEST(RtmpHandshake, OneMacForManyHandshakes) {
  HandshakeMac mac;
  for (uint32_t i = 0; i < 20; ++i) {
    ClientHandshake client(seeded(100 + i), mac);
    Bytes c0c1 = to_bytes(client.take_output());
    ServerHandshake server(seeded(200 + i), mac);
    server.feed(c0c1);
    ASSERT_TRUE(server.complex()) << i;
    Bytes s = to_bytes(server.take_output());
    const uint8_t* c1 = c0c1.data() + 1;
    EXPECT_TRUE(digest_ok(s.data() + 1, 0, key(kFmsText, false))) << i;
    EXPECT_TRUE(response_ok(s.data() + 1 + 1536, key(kFmsText, true), c1 + offset_of(c1, 0))) << i;
    client.feed(s);
    EXPECT_TRUE(client.server_digest_ok()) << i;
    Bytes c2 = to_bytes(client.take_output());
    EXPECT_TRUE(response_ok(c2.data(), key(kFpText, true), s.data() + 1 + offset_of(s.data() + 1, 0))) << i;
  }
}

TEST(RtmpHandshake, MacDigestsMatchHmacFromScratch) {
  HandshakeMac mac;
  const Bytes a = random_block(5), b = random_block(6);
  for (int round = 0; round < 3; ++round) {  // the same contexts again
    const HandshakeMac::Digest f = mac.digest(HandshakeMac::Key::ServerFull, {a, b});
    EXPECT_EQ(Bytes(f.begin(), f.end()), evp_hmac(key(kFmsText, true), {{a.data(), a.size()}, {b.data(), b.size()}}));
    for (const Bytes& k : {a, b, Bytes{}}) {
      const HandshakeMac::Digest d = mac.digest(k, {std::span<const uint8_t>(b).first(100)});
      EXPECT_EQ(Bytes(d.begin(), d.end()), evp_hmac(k, {{b.data(), 100}})) << k.size();
    }
    const HandshakeMac::Digest p = mac.digest(HandshakeMac::Key::ClientPartial, {a});
    EXPECT_EQ(Bytes(p.begin(), p.end()), evp_hmac(key(kFpText, false), {{a.data(), a.size()}}));
  }
}
