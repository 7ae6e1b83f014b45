#include "rill/protocol/hls_uri_query.h"

namespace rill::protocol {

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
    out += line;
    if (!line.empty() && line.front() != '#' && !query.empty()) {
      out += line.find('?') == std::string_view::npos ? '?' : '&';
      out += query;
    }
    if (cr) out += '\r';
    if (!last) out += '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace rill::protocol
