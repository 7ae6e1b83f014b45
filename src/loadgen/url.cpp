#include "url.h"

#include <netdb.h>
#include <netinet/in.h>

#include <cctype>
#include <charconv>
#include <cstring>
#include <vector>

namespace rill::loadgen {

std::string Url::tc_url() const {
  return scheme + "://" + host_header() + "/" + app;
}

std::string Url::host_header() const {
  bool v6 = host.find(':') != std::string::npos;
  std::string h = v6 ? "[" + host + "]" : host;
  uint16_t def = scheme == "rtmp" ? 1935 : 80;
  return port == def ? h : h + ":" + std::to_string(port);
}

std::string Url::to_string() const { return scheme + "://" + host_header() + path; }

std::optional<Url> parse_url(std::string_view text, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<Url> {
    if (error) *error = "bad URL '" + std::string(text) + "': " + why;
    return std::nullopt;
  };
  Url u;
  size_t p = text.find("://");
  if (p == std::string_view::npos) return fail("expected scheme://");
  u.scheme = std::string(text.substr(0, p));
  for (auto& c : u.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (u.scheme != "rtmp" && u.scheme != "http") return fail("scheme must be rtmp or http");
  std::string_view rest = text.substr(p + 3);
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  u.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (authority.empty()) return fail("missing host");
  std::string_view port_text;
  if (authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return fail("unterminated [IPv6]");
    u.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return fail("junk after ]");
      port_text = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (u.host.empty()) return fail("missing host");
  u.port = u.scheme == "rtmp" ? 1935 : 80;
  if (!port_text.empty()) {
    unsigned v = 0;
    auto r = std::from_chars(port_text.data(), port_text.data() + port_text.size(), v);
    if (r.ec != std::errc() || r.ptr != port_text.data() + port_text.size() || v == 0 || v > 65535) {
      return fail("bad port");
    }
    u.port = static_cast<uint16_t>(v);
  }
  if (u.scheme == "rtmp") {
    // Split before the query so a '/' inside it does not count.
    std::string_view path = u.path;
    size_t q = path.find('?');
    std::string_view no_query = path.substr(0, q);
    size_t last = no_query.rfind('/');
    if (last == 0 || last == std::string_view::npos) return fail("expected rtmp://host/app/stream");
    u.app = std::string(no_query.substr(1, last - 1));
    u.stream = std::string(path.substr(last + 1));
    if (u.app.empty() || u.stream.empty() || u.stream.front() == '?') {
      return fail("expected rtmp://host/app/stream");
    }
  }
  return u;
}

Url with_stream_suffix(const Url& url, int k) {
  Url u = url;
  std::string suffix(1, '_');  // (not "_" + to_string: GCC 12 -Wrestrict false positive)
  suffix += std::to_string(k);
  if (u.scheme == "rtmp") {
    size_t q = u.stream.find('?');
    u.stream.insert(q == std::string::npos ? u.stream.size() : q, suffix);
    u.path = "/" + u.app + "/" + u.stream;
  } else {
    size_t q = u.path.find('?');
    size_t end = q == std::string::npos ? u.path.size() : q;
    size_t dot = u.path.rfind('.', end);
    size_t slash = u.path.rfind('/', end);
    size_t at = (dot != std::string::npos && (slash == std::string::npos || dot > slash)) ? dot : end;
    u.path.insert(at, suffix);
  }
  return u;
}

std::optional<Url> resolve_reference(const Url& base, std::string_view ref, std::string* error) {
  if (ref.find("://") != std::string_view::npos) return parse_url(ref, error);
  Url u = base;
  if (ref.size() >= 2 && ref.substr(0, 2) == "//") return parse_url(base.scheme + ":" + std::string(ref), error);
  if (!ref.empty() && ref.front() == '/') {
    u.path = std::string(ref);
    return u;
  }
  std::string dir = base.path.substr(0, base.path.find('?'));
  dir = dir.substr(0, dir.rfind('/') + 1);
  if (dir.empty()) dir = "/";
  // Resolve "./" and "../" segments (enough for playlists; RFC 3986 5.2.4 in short).
  std::string joined = dir + std::string(ref);
  std::string query;
  if (size_t q = joined.find('?'); q != std::string::npos) {
    query = joined.substr(q);
    joined.resize(q);
  }
  std::vector<std::string> segs;
  size_t i = 1;
  while (i <= joined.size()) {
    size_t j = joined.find('/', i);
    if (j == std::string::npos) j = joined.size();
    std::string seg = joined.substr(i, j - i);
    bool last = j == joined.size();
    if (seg == "..") {
      if (!segs.empty()) segs.pop_back();
      if (last) segs.push_back("");
    } else if (seg == ".") {
      if (last) segs.push_back("");
    } else {
      segs.push_back(seg);
    }
    i = j + 1;
  }
  u.path.clear();
  for (auto& s : segs) u.path += "/" + s;
  if (u.path.empty()) u.path = "/";
  u.path += query;
  return u;
}

std::optional<Endpoint> resolve(const std::string& host, uint16_t port, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || !res) {
    if (error) *error = "cannot resolve " + host + ": " + gai_strerror(rc);
    return std::nullopt;
  }
  Endpoint ep;
  std::memcpy(&ep.addr, res->ai_addr, res->ai_addrlen);
  ep.len = res->ai_addrlen;
  freeaddrinfo(res);
  return ep;
}

}  // namespace rill::loadgen
