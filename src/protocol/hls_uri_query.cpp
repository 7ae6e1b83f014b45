#include "rill/protocol/hls_uri_query.h"

namespace rill::protocol {

namespace {

void append_query(std::string& out, std::string_view uri, std::string_view query) {
  out += uri.find('?') == std::string_view::npos ? '?' : '&';
  out += query;
}

// A tag's URI="..." attribute (EXT-X-MAP, EXT-X-PART, EXT-X-PRELOAD-HINT, RFC 8216bis §4.4)
// names a resource the player fetches too: it gets the query inside its quotes.
void append_tag_with_uri_query(std::string& out, std::string_view line, std::string_view query) {
  constexpr std::string_view attr = "URI=\"";
  size_t at = 0;
  while (true) {
    const size_t found = line.find(attr, at);
    const size_t close = found == std::string_view::npos ? found : line.find('"', found + attr.size());
    if (close == std::string_view::npos) break;
    // Only a whole attribute name: at the start of the list or after ',' or ':'.
    const bool whole = found > 0 && (line[found - 1] == ',' || line[found - 1] == ':');
    out += line.substr(at, close - at);
    if (whole) append_query(out, line.substr(found + attr.size(), close - found - attr.size()), query);
    at = close;
  }
  out += line.substr(at);
}

}  // namespace

std::string playlist_with_uri_query(std::string_view playlist, std::string_view query) {
  std::string out;
  out.reserve(playlist.size() + 32 * (query.size() + 1));
  size_t start = 0;
  while (start < playlist.size()) {
    size_t end = playlist.find('\n', start);
    const bool last = end == std::string_view::npos;
    if (last) end = playlist.size();
    std::string_view line = playlist.substr(start, end - start);
    const bool cr = !line.empty() && line.back() == '\r';
    if (cr) line.remove_suffix(1);
    if (!line.empty() && line.front() == '#' && !query.empty()) {
      append_tag_with_uri_query(out, line, query);
    } else {
      out += line;
      if (!line.empty() && !query.empty()) append_query(out, line, query);
    }
    if (cr) out += '\r';
    if (!last) out += '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace rill::protocol
