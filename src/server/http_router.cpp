#include "rill/server/http_router.h"

#include <charconv>

#include "rill/media/stream_key.h"

namespace rill::server {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The one name rule (media/stream_key.h); the path is already percent-decoded.
bool valid_name(std::string_view s) { return media::is_valid_name(s); }

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

HttpRoute bad(std::string why) {
  HttpRoute r;
  r.kind = HttpRoute::Kind::BadRequest;
  r.error = std::move(why);
  return r;
}

}  // namespace

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      char d = static_cast<char>(hi * 16 + lo);
      if (d == '\0') return false;
      out.push_back(d);
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return true;
}

HttpRoute route_http(std::string_view uri, const HttpRouterLimits& limits) {
  std::string_view path = uri, query;
  if (auto q = uri.find('?'); q != std::string_view::npos) {
    path = uri.substr(0, q);
    query = uri.substr(q + 1);
  }
  if (auto h = path.find('#'); h != std::string_view::npos) path = path.substr(0, h);
  if (path.size() > limits.max_path) return bad("path longer than " + std::to_string(limits.max_path) + " bytes");
  if (query.size() > limits.max_query) return bad("query longer than " + std::to_string(limits.max_query) + " bytes");
  if (path.empty() || path[0] != '/') return bad("path must start with '/'");
  std::string decoded;
  if (!percent_decode(path, decoded)) return bad("malformed percent-encoding in path");
  for (unsigned char c : decoded) {
    if (c < 0x20 || c == 0x7f || c == '\\') return bad("control character or backslash in path");
  }
  if (decoded.find("/../") != std::string::npos || ends_with(decoded, "/..") || decoded.find("/./") != std::string::npos)
    return bad("path traversal");
  if (decoded.find("//") != std::string::npos) return bad("empty path segment");

  if (decoded == "/healthz") return HttpRoute{HttpRoute::Kind::Health, {}, {}, 0, {}};

  // Split into segments after the leading '/'.
  std::string_view rest(decoded);
  rest.remove_prefix(1);
  std::string_view seg[3];
  size_t n = 0;
  while (!rest.empty()) {
    if (n == 3) return HttpRoute{};
    auto slash = rest.find('/');
    seg[n++] = rest.substr(0, slash);
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
    if (rest.empty()) return HttpRoute{};  // trailing slash
  }
  HttpRoute r;
  if (n == 2) {
    std::string_view file = seg[1];
    if (ends_with(file, ".flv")) {
      r.kind = HttpRoute::Kind::Flv;
      file.remove_suffix(4);
    } else if (ends_with(file, ".m3u8")) {
      r.kind = HttpRoute::Kind::HlsPlaylist;
      file.remove_suffix(5);
    } else {
      return HttpRoute{};
    }
    if (!valid_name(seg[0]) || !valid_name(file)) return bad("invalid app or stream name");
    r.app = std::string(seg[0]);
    r.stream = std::string(file);
    return r;
  }
  if (n == 3) {
    std::string_view file = seg[2];
    if (!ends_with(file, ".ts")) return HttpRoute{};
    file.remove_suffix(3);
    if (!valid_name(seg[0]) || !valid_name(seg[1])) return bad("invalid app or stream name");
    uint64_t seq = 0;
    auto [p, ec] = std::from_chars(file.data(), file.data() + file.size(), seq);
    if (ec != std::errc() || p != file.data() + file.size() || file.empty()) return HttpRoute{};
    r.kind = HttpRoute::Kind::HlsSegment;
    r.app = std::string(seg[0]);
    r.stream = std::string(seg[1]);
    r.segment = seq;
    return r;
  }
  return HttpRoute{};
}

}  // namespace rill::server
