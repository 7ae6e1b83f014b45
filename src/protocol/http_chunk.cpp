#include "rill/protocol/http_chunk.h"

namespace rill::protocol {

std::string http_chunk_size_line(size_t size) {
  char hex[2 * sizeof(size_t)];
  size_t len = 0;
  do {
    hex[sizeof hex - ++len] = "0123456789abcdef"[size & 0xf];
    size >>= 4;
  } while (size != 0);
  std::string line(hex + sizeof hex - len, len);
  line += "\r\n";
  return line;
}

std::string http_chunk(std::span<const uint8_t> data) {
  if (data.empty()) return {};
  std::string out = http_chunk_size_line(data.size());
  out.append(reinterpret_cast<const char*>(data.data()), data.size());
  out += "\r\n";
  return out;
}

}  // namespace rill::protocol
