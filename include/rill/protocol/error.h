#pragma once
#include <stdexcept>
#include <string>

namespace rill::protocol {

// Raised by every byte codec in protocol/ on malformed or over-limit input. The message says
// what was expected and what was found ("chunk header: message length 2147483648 exceeds limit
// 16777216"); the session that catches it adds the peer and closes that one connection.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace rill::protocol
