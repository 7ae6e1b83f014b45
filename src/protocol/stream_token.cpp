#include "rill/protocol/stream_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "rill/protocol/query_string.h"

namespace rill::protocol {

namespace {

constexpr size_t kMaxExpiresDigits = 12;  // up to year 33658: past that a value is garbage

std::optional<int64_t> parse_expires(const std::string& text) {
  if (text.empty() || text.size() > kMaxExpiresDigits) return std::nullopt;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 15];
  }
  return out;
}

std::string token_sign(std::string_view secret, std::string_view action, std::string_view app, std::string_view name,
                       int64_t expires) {
  std::string message;
  message.append(action).append(":").append(app).append("/").append(name).append(":").append(std::to_string(expires));
  return hmac_sha256_hex(secret, message);
}

std::string token_query(std::string_view secret, std::string_view action, std::string_view app, std::string_view name,
                        int64_t expires) {
  return "expires=" + std::to_string(expires) + "&sign=" + token_sign(secret, action, app, name, expires);
}

std::optional<std::string> verify_token(std::string_view secret, std::string_view action, std::string_view app,
                                        std::string_view name, std::string_view query, int64_t now) {
  if (query.size() > kMaxTokenQuery) {
    return "query of " + std::to_string(query.size()) + " bytes is longer than " + std::to_string(kMaxTokenQuery);
  }
  const QueryParams params = parse_query(query);
  const std::string* expires_text = query_value(params, "expires");
  const std::string* sign = query_value(params, "sign");
  if (!expires_text && !sign) return std::string("no token (expires and sign missing)");
  if (!expires_text) return std::string("token without expires");
  if (!sign) return std::string("token without sign");
  const auto expires = parse_expires(*expires_text);
  if (!expires) return std::string("malformed expires (expected UNIX seconds)");
  const std::string expected = token_sign(secret, action, app, name, *expires);
  if (sign->size() != expected.size() || CRYPTO_memcmp(sign->data(), expected.data(), expected.size()) != 0) {
    return "wrong sign for " + std::string(action) + " " + std::string(app) + "/" + std::string(name);
  }
  if (*expires < now) return "token expired " + std::to_string(now - *expires) + " s ago";
  return std::nullopt;
}

std::string token_part_of(std::string_view query) {
  if (query.size() > kMaxTokenQuery) return {};
  std::string expires, sign;
  size_t start = 0;
  while (start < query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view part = query.substr(start, end - start);
    if (part.starts_with("expires=") && expires.empty()) expires = std::string(part);
    if (part.starts_with("sign=") && sign.empty()) sign = std::string(part);
    start = end + 1;
  }
  if (expires.empty() || sign.empty()) return {};
  std::string out = expires + "&" + sign;
  // It goes into a playlist verbatim: only URL-safe characters pass.
  for (char c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '=' ||
                    c == '&' || c == '%' || c == '-' || c == '.' || c == '_' || c == '~';
    if (!ok) return {};
  }
  return out;
}

}  // namespace rill::protocol
